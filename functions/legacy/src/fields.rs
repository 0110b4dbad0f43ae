//! Typed reading of a request element's attributes and children. Every attribute and child
//! a handler does not ask for is refused when the reader is finished, so a misspelled
//! attribute is a VALIDATION_FAILURE rather than a silently ignored value.

use crate::xml::Element;
use rust_decimal::Decimal;
use shared::{Error, Result};

/// A reader over one element that remembers what was read.
pub struct Fields<'a> {
    element: &'a Element,
    used_attrs: Vec<bool>,
    used_children: Vec<bool>,
}

impl<'a> Fields<'a> {
    /// Reads `element`, which must be named `expected`.
    pub fn new(element: &'a Element, expected: &str) -> Result<Fields<'a>> {
        if element.name != expected {
            return Err(Error::bad_request(format!(
                "expected a <{expected}> element, found <{}>",
                element.name
            )));
        }
        Ok(Fields {
            element,
            used_attrs: vec![false; element.attrs.len()],
            used_children: vec![false; element.children.len()],
        })
    }

    /// The element's name.
    pub fn name(&self) -> &str {
        &self.element.name
    }

    /// An attribute as text, when present.
    pub fn text(&mut self, name: &str) -> Option<String> {
        let i = self.element.attrs.iter().position(|(k, _)| k == name)?;
        self.used_attrs[i] = true;
        Some(self.element.attrs[i].1.clone())
    }

    /// A required attribute as non-empty text.
    pub fn required(&mut self, name: &str) -> Result<String> {
        match self.text(name) {
            Some(v) if !v.trim().is_empty() => Ok(v),
            Some(_) => Err(Error::bad_request(format!(
                "attribute {name} of <{}> must not be empty",
                self.element.name
            ))),
            None => Err(Error::bad_request(format!(
                "attribute {name} is required on <{}>",
                self.element.name
            ))),
        }
    }

    /// An attribute that must be an exact decimal number within the bound on amounts
    /// (`shared::money::MAX_INTEGER_DIGITS`).
    pub fn decimal(&mut self, name: &str) -> Result<Option<Decimal>> {
        let element = self.element.name.clone();
        self.text(name)
            .map(|v| {
                shared::money::parse_amount(v.trim()).map_err(|e| {
                    Error::bad_request(format!("attribute {name} of <{element}>: {e}"))
                })
            })
            .transpose()
    }

    /// An attribute that must be `true` or `false`.
    pub fn boolean(&mut self, name: &str) -> Result<Option<bool>> {
        self.parsed(name, "true or false", |v| match v.trim() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        })
    }

    /// An attribute that must be a 64-bit integer.
    pub fn integer(&mut self, name: &str) -> Result<Option<i64>> {
        self.parsed(name, "a 64-bit integer", |v| v.trim().parse().ok())
    }

    fn parsed<T>(
        &mut self,
        name: &str,
        kind: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>> {
        let element = self.element.name.clone();
        self.text(name)
            .map(|v| {
                parse(&v).ok_or_else(|| {
                    Error::bad_request(format!(
                        "attribute {name} of <{element}>: '{v}' is not {kind}"
                    ))
                })
            })
            .transpose()
    }

    /// The first child named `name`, when present (a repeat stays unread, so `finish`
    /// refuses it).
    pub fn child(&mut self, name: &str) -> Option<&'a Element> {
        let i = self.element.children.iter().position(|c| c.name == name)?;
        self.used_children[i] = true;
        Some(&self.element.children[i])
    }

    /// Every child named `name`.
    pub fn children(&mut self, name: &str) -> Vec<&'a Element> {
        let element = self.element;
        element
            .children
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name == name)
            .map(|(i, c)| {
                self.used_children[i] = true;
                c
            })
            .collect()
    }

    /// The `eid` of a reference child such as `<billingAccount eid="1"/>`; the reference's
    /// other attributes (what a GET rendered) are ignored.
    pub fn reference(&mut self, name: &str) -> Result<Option<i64>> {
        let parent = self.element.name.clone();
        self.child(name)
            .map(|child| eid_of(child, &parent))
            .transpose()
    }

    /// Marks attributes as read without using them (read-only attributes a client may echo
    /// back from a GET).
    pub fn ignore(&mut self, names: &[&str]) {
        for name in names {
            self.text(name);
        }
    }

    /// Refuses whatever was not read: unknown attributes and children, and repeated children.
    pub fn finish(self) -> Result<()> {
        let name = &self.element.name;
        if let Some(i) = self.used_attrs.iter().position(|u| !u) {
            return Err(Error::bad_request(format!(
                "unknown attribute {} on <{name}>",
                self.element.attrs[i].0
            )));
        }
        if let Some(i) = self.used_children.iter().position(|u| !u) {
            return Err(Error::bad_request(format!(
                "unknown or repeated element <{}> in <{name}>",
                self.element.children[i].name
            )));
        }
        Ok(())
    }
}

/// The `eid` attribute of a reference element inside `<parent>` (other attributes ignored).
pub fn eid_of(element: &Element, parent: &str) -> Result<i64> {
    let name = &element.name;
    let raw = element
        .attrs
        .iter()
        .find(|(k, _)| k == "eid")
        .map(|(_, v)| v)
        .ok_or_else(|| {
            Error::bad_request(format!("<{name}> in <{parent}> needs an eid attribute"))
        })?;
    raw.trim().parse().map_err(|_| {
        Error::bad_request(format!(
            "<{name}> in <{parent}>: eid '{raw}' is not a 64-bit integer"
        ))
    })
}
