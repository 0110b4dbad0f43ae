//! The JSON Schema of the fixture document, derived from the very serde types the loader reads
//! (so the two cannot drift): the document's members are `SeedData`'s fields, each record's
//! properties are the fields its create input declares to serde, found by running the type's
//! `Deserialize` against [`Introspect`], a deserializer that answers nothing and reports
//! the shape it was asked for. Date members (`document::is_date_key`) carry the pattern of
//! an absolute date or a relative one (`time::relative`).
//!
//! A field with a closed set (`sets`) lists its members as an `enum`.
//!
//! Records list their state fields too (`state`) and are closed (the loader refuses any other
//! field). What the schema cannot say is left open rather than guessed: field types other
//! than dates, and the fields of nested objects.

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::{json, Map, Value};

/// Pattern of a date member: a date or date-time as written, or a relative date.
pub const DATE_PATTERN: &str =
    "^(now([+-][0-9]+[smhdwMy]|/[a-zA-Z]+)*|[0-9]{4}-[0-9]{2}-[0-9]{2}([T ].*)?)$";

/// The shape a type asked [`Introspect`] for.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// A sequence of the inner shape.
    pub array: bool,
    /// The struct's field names (None: not a plain struct).
    pub fields: Option<&'static [&'static str]>,
}

/// The "error" that carries the [`Shape`] out of a `Deserialize` impl.
#[derive(Debug)]
pub struct Found(pub Shape);

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shape found")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Found(Shape::default())
    }
}

/// A deserializer that reports the shape it is asked for (module doc).
pub struct Introspect;

struct One(bool);

impl<'de> SeqAccess<'de> for One {
    type Error = Found;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Found> {
        if std::mem::replace(&mut self.0, true) {
            return Ok(None);
        }
        seed.deserialize(Introspect).map(Some)
    }
}

impl<'de> Deserializer<'de> for Introspect {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(Shape::default()))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        match visitor.visit_seq(One(false)) {
            Err(Found(mut shape)) => {
                shape.array = true;
                Err(Found(shape))
            }
            Ok(_) => Err(Found(Shape {
                array: true,
                fields: None,
            })),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Found> {
        Err(Found(Shape {
            array: false,
            fields: Some(fields),
        }))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The shape of `T` as its `Deserialize` reads it.
pub fn shape<T: for<'de> serde::Deserialize<'de>>() -> Shape {
    match T::deserialize(Introspect) {
        Err(Found(shape)) => shape,
        Ok(_) => Shape::default(),
    }
}

/// The schema of one member of the document: its create input's fields (`input`, None when
/// they cannot be listed) and its state fields (`state`); records are closed when listed, as
/// the loader refuses any other field.
pub fn member_schema(shape: &Shape, input: Option<Vec<&'static str>>, name: &str) -> Value {
    let mut record = json!({"type": "object"});
    if let Some(fields) = input.or(shape.fields.map(<[_]>::to_vec)) {
        let state = super::state::fields(name).into_iter().map(|(f, _, _)| f);
        let props: Map<String, Value> = fields
            .into_iter()
            .chain(state)
            .map(|f| {
                let p = if super::document::is_date_key(f) {
                    json!({"type": ["string", "null"], "pattern": DATE_PATTERN})
                } else if let Some(set) = super::sets::of(name, f) {
                    closed(set.allowed)
                } else {
                    json!({})
                };
                (f.to_string(), p)
            })
            .collect();
        record["properties"] = Value::Object(props);
        record["additionalProperties"] = Value::Bool(false);
    }
    if shape.array {
        json!({"type": "array", "maxItems": super::document::MAX_RECORDS_PER_KIND, "items": record})
    } else {
        record
    }
}

/// The schema of a field with a closed set (`sets`); null takes the field's default.
fn closed(allowed: super::sets::Allowed) -> Value {
    match allowed {
        super::sets::Allowed::OneOf(values) => {
            let mut members: Vec<Value> = values.iter().map(|v| json!(v)).collect();
            members.push(Value::Null);
            json!({"enum": members})
        }
        super::sets::Allowed::Range(low, high) => {
            json!({"type": "integer", "minimum": low, "maximum": high})
        }
    }
}

/// The whole document's schema from its members' shapes, in order.
pub fn document_schema(members: &[(&str, Shape, Option<Vec<&'static str>>)]) -> Value {
    let props: Map<String, Value> = members
        .iter()
        .map(|(name, shape, input)| (name.to_string(), member_schema(shape, input.clone(), name)))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "/sandbox/v1/fixtures.schema.json",
        "title": "Sandbox fixture document (docs/fixtures.md)",
        "type": "object",
        "additionalProperties": false,
        "properties": props,
    })
}
