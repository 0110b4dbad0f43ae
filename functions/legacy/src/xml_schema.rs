//! The shapes of Surface A's XML, and the XSD written from them.
//!
//! Entities are declared as field tables ([`crate::entity::Entity`]): the same table renders
//! a row and declares the element, so a field added to an entity is in the XSD. Messages
//! (command requests and responses, the create answer, the fault, the user) are declared as
//! [`Shape`]s next to the code that reads or writes them. [`xsd`] writes one schema (target
//! namespace: the domain namespace) with a global element and a complex type of the same
//! name for every entity, collection and message; the WADL's representations name these
//! elements and its `<grammars>` include the schema (served at [`XSD_PATH`]).
//!
//! Every attribute of an entity is optional in the schema: the same element is the body of
//! a create and of a PUT, which carry only the attributes they set. Page wrappers and
//! responses mark what every answer carries as required. Children are declared in the order
//! the renderer writes them.

use crate::entity::{Child, Entity};
use crate::xml::{indented_document, Node};

/// Where the schema is served, below the Surface A root (where JAX-RS stacks serve the
/// grammar of their WADL, `application.wadl/xsd0.xsd`).
pub const XSD_PATH: &str = "application.wadl/xsd0.xsd";

const XS: &str = "http://www.w3.org/2001/XMLSchema";

/// The value space of an attribute or text element.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A 64-bit integer (eids, counts).
    Long,
    /// Text.
    Text,
    /// An exact decimal (money, amounts).
    Decimal,
    /// `true` or `false`.
    Boolean,
    /// An RFC 3339 instant with an offset.
    DateTime,
    /// One of the listed values.
    OneOf(&'static [&'static str]),
}

impl Kind {
    fn builtin(self) -> &'static str {
        match self {
            Kind::Long => "xs:long",
            Kind::Text | Kind::OneOf(_) => "xs:string",
            Kind::Decimal => "xs:decimal",
            Kind::Boolean => "xs:boolean",
            Kind::DateTime => "xs:dateTime",
        }
    }
}

/// An attribute of a message.
#[derive(Debug, Clone, Copy)]
pub struct Attribute {
    /// Its name.
    pub name: &'static str,
    /// Its values.
    pub kind: Kind,
    /// Whether every instance carries it.
    pub required: bool,
}

impl Attribute {
    /// An attribute every instance carries.
    pub const fn required(name: &'static str, kind: Kind) -> Attribute {
        Attribute {
            name,
            kind,
            required: true,
        }
    }

    /// An attribute that may be absent.
    pub const fn optional(name: &'static str, kind: Kind) -> Attribute {
        Attribute {
            name,
            kind,
            required: false,
        }
    }
}

/// How often a part occurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurs {
    /// Exactly once.
    One,
    /// At most once.
    Optional,
    /// Any number of times.
    Many,
}

/// A child of a message, in document order.
#[derive(Debug, Clone, Copy)]
pub enum Part {
    /// A global element (an entity or another message).
    Global(&'static str, Occurs),
    /// A local element with its own attributes and children.
    Local {
        /// Element name.
        element: &'static str,
        /// Its attributes.
        attrs: &'static [Attribute],
        /// Its children.
        parts: &'static [Part],
        /// How often it occurs.
        occurs: Occurs,
    },
    /// An element holding text of `kind` (the fault's children).
    Text(&'static str, Kind),
}

/// A message: an element with attributes and children.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Element (and type) name.
    pub element: &'static str,
    /// Its attributes.
    pub attrs: &'static [Attribute],
    /// Its children, in order.
    pub parts: &'static [Part],
}

/// What a request or answer of a route carries.
#[derive(Clone, Copy)]
pub enum Body {
    /// One object of an entity (a GET by eid, the body of a create or an edit).
    Entity(&'static Entity),
    /// One page of an entity's collection.
    Page(&'static Entity),
    /// A message (a command's request or answer, the create answer, ...).
    Message(&'static Shape),
}

impl Body {
    /// The root element.
    pub fn element(self) -> &'static str {
        match self {
            Body::Entity(e) => e.element,
            Body::Page(e) => e.collection,
            Body::Message(s) => s.element,
        }
    }
}

/// `<element eid=""/>`, a reference by eid inside a message.
pub const EID_ONLY: &[Attribute] = &[Attribute::required("eid", Kind::Long)];

/// The attributes of every page wrapper.
pub const PAGE_ATTRIBUTES: &[Attribute] = &[
    Attribute::required("pageNumber", Kind::Long),
    Attribute::required("pageSize", Kind::Long),
    Attribute::required("totalElements", Kind::Long),
    Attribute::required("elementCount", Kind::Long),
    Attribute::required("totalPages", Kind::Long),
];

/// The schema of every body in `bodies` (an entity brings its collection, and its
/// collection the entity), with target namespace `namespace`; each element once.
pub fn xsd(bodies: impl IntoIterator<Item = Body>, namespace: &str) -> String {
    let mut w = Writer::default();
    let mut done: Vec<&str> = Vec::new();
    for body in bodies {
        if done.contains(&body.element()) {
            continue;
        }
        match body {
            Body::Entity(entity) | Body::Page(entity) => {
                done.extend([entity.element, entity.collection]);
                w.entity(entity);
            }
            Body::Message(shape) => {
                done.push(shape.element);
                w.shape(shape);
            }
        }
    }
    let root = Node::new("xs:schema")
        .attr("xmlns:xs", XS)
        .attr("xmlns:dom", namespace)
        .attr("targetNamespace", namespace)
        .attr("elementFormDefault", "qualified")
        .attr("version", "1.28")
        .children(w.simple_types)
        .children(w.declarations);
    indented_document(root, namespace)
}

/// Global declarations in the order they are written, named enumerations first.
#[derive(Default)]
struct Writer {
    simple_types: Vec<Node>,
    declarations: Vec<Node>,
}

impl Writer {
    fn global(&mut self, name: &str, parts: Vec<Node>, attrs: Vec<Node>) {
        self.declarations.push(
            Node::new("xs:element")
                .attr("name", name)
                .attr("type", format!("dom:{name}")),
        );
        self.declarations
            .push(complex_type(Some(name), parts, attrs));
    }

    fn entity(&mut self, entity: &Entity) {
        let attrs = entity
            .fields
            .iter()
            .map(|f| self.attribute(entity.element, f.name, f.kind, false))
            .collect();
        let parts = entity
            .children
            .iter()
            .map(|c| self.child(entity.element, c))
            .collect();
        self.global(entity.element, parts, attrs);
        let items = vec![global_ref(entity.element, Occurs::Many)];
        let attrs = PAGE_ATTRIBUTES
            .iter()
            .map(|a| self.attribute(entity.collection, a.name, a.kind, a.required))
            .collect();
        self.global(entity.collection, items, attrs);
    }

    fn child(&mut self, owner: &str, child: &Child) -> Node {
        match child {
            Child::Ref {
                element, fields, ..
            } => {
                // A reference names its object by eid; what else it shows is optional.
                let scope = format!("{owner}_{element}");
                let mut attrs = vec![self.attribute(&scope, "eid", Kind::Long, true)];
                for f in *fields {
                    attrs.push(self.attribute(&scope, f.name, f.kind, false));
                }
                occurs(
                    Node::new("xs:element")
                        .attr("name", *element)
                        .child(complex_type(None, Vec::new(), attrs)),
                    Occurs::Optional,
                )
            }
            Child::Named { elements, .. } => {
                Node::new("xs:choice")
                    .attr("minOccurs", 0)
                    .children(elements.iter().map(|e| {
                        Node::new("xs:element")
                            .attr("name", *e)
                            .child(Node::new("xs:complexType"))
                    }))
            }
        }
    }

    fn shape(&mut self, shape: &Shape) {
        let attrs = shape
            .attrs
            .iter()
            .map(|a| self.attribute(shape.element, a.name, a.kind, a.required))
            .collect();
        let parts = shape
            .parts
            .iter()
            .map(|p| self.part(shape.element, p))
            .collect();
        self.global(shape.element, parts, attrs);
    }

    fn part(&mut self, owner: &str, part: &Part) -> Node {
        match *part {
            Part::Global(element, how) => global_ref(element, how),
            Part::Local {
                element,
                attrs,
                parts,
                occurs: how,
            } => {
                let scope = format!("{owner}_{element}");
                let attrs = attrs
                    .iter()
                    .map(|a| self.attribute(&scope, a.name, a.kind, a.required))
                    .collect();
                let parts = parts.iter().map(|p| self.part(&scope, p)).collect();
                occurs(
                    Node::new("xs:element")
                        .attr("name", element)
                        .child(complex_type(None, parts, attrs)),
                    how,
                )
            }
            Part::Text(element, kind) => Node::new("xs:element")
                .attr("name", element)
                .attr("type", self.type_of(owner, element, kind)),
        }
    }

    /// An attribute declaration; an enumeration becomes a named simple type
    /// `<owner><Name>` (e.g. `billingAccountStatus`), which generated code turns into an enum.
    fn attribute(&mut self, owner: &str, name: &str, kind: Kind, required: bool) -> Node {
        let node = Node::new("xs:attribute")
            .attr("name", name)
            .attr("type", self.type_of(owner, name, kind));
        if required {
            node.attr("use", "required")
        } else {
            node
        }
    }

    fn type_of(&mut self, owner: &str, name: &str, kind: Kind) -> String {
        let Kind::OneOf(values) = kind else {
            return kind.builtin().to_string();
        };
        let type_name = enum_type_name(owner, name);
        let restriction = Node::new("xs:restriction")
            .attr("base", "xs:string")
            .children(
                values
                    .iter()
                    .map(|v| Node::new("xs:enumeration").attr("value", v)),
            );
        self.simple_types.push(
            Node::new("xs:simpleType")
                .attr("name", &type_name)
                .child(restriction),
        );
        format!("dom:{type_name}")
    }
}

/// `billingAccount` + `status` -> `billingAccountStatus`; a local scope `a_b` -> `aB`.
fn enum_type_name(owner: &str, name: &str) -> String {
    let mut out = String::new();
    for (i, piece) in owner.split('_').chain([name]).enumerate() {
        let mut chars = piece.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.push(first);
            } else {
                out.extend(first.to_uppercase());
            }
            out.push_str(chars.as_str());
        }
    }
    out
}

fn complex_type(name: Option<&str>, parts: Vec<Node>, attrs: Vec<Node>) -> Node {
    let mut node = Node::new("xs:complexType");
    if let Some(name) = name {
        node = node.attr("name", name);
    }
    if !parts.is_empty() {
        node = node.child(Node::new("xs:sequence").children(parts));
    }
    node.children(attrs)
}

fn global_ref(element: &str, how: Occurs) -> Node {
    occurs(
        Node::new("xs:element").attr("ref", format!("dom:{element}")),
        how,
    )
}

fn occurs(node: Node, how: Occurs) -> Node {
    match how {
        Occurs::One => node,
        Occurs::Optional => node.attr("minOccurs", 0),
        Occurs::Many => node.attr("minOccurs", 0).attr("maxOccurs", "unbounded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumeration_types_are_named_after_their_owner() {
        assert_eq!(
            enum_type_name("billingAccount", "status"),
            "billingAccountStatus"
        );
        assert_eq!(
            enum_type_name("fault", "failureReason"),
            "faultFailureReason"
        );
        assert_eq!(enum_type_name("a_b", "c"), "aBC");
    }
}
