//! Pieces of JSON Schema for the types the OpenAPI documents are derived from (utoipa's
//! `ToSchema`), where a Rust type says less than the wire does: a `String` that holds one of
//! a fixed set of values, a free-form JSON object. Nothing here knows HTTP; the documents
//! themselves are assembled in `web::openapi` and the surface crates.
//!
//! Invariants (what generated clients need): an enumeration that admits null is `anyOf` the
//! enumeration and `{"type": "null"}` (openapi-python-client makes one class of that; of
//! `type: [string, null]` with null among the `enum` values it made three), and no two values
//! differ only in case. An exact decimal is `type: number` (the wire carries JSON numbers)
//! with `format: decimal` (the OpenAPI format registry's name for it), which a generator can
//! map to a decimal type (the Rust client maps it to `rust_decimal::Decimal`).

use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, Array, ArrayBuilder, Object, ObjectBuilder, Schema,
    SchemaFormat, SchemaType, Type,
};

/// A string that is one of `values`.
pub fn enumeration(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// A string that is one of `values`, or null: `anyOf` the enumeration and null, so that a
/// generated client has one enumeration type (its member optional), and the enumeration's
/// own values are the server's only.
pub fn nullable_enumeration(values: &[&str]) -> Schema {
    or_null(enumeration(values))
}

/// `schema` or null, as `anyOf` (see [`nullable_enumeration`]).
fn or_null(schema: Object) -> Schema {
    Schema::AnyOf(
        AnyOfBuilder::new()
            .item(schema)
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .build(),
    )
}

/// An object with members of its own (described in words): `additionalProperties: true`, or
/// generated types read a bare `{"type": "object"}` as one with no members at all.
pub fn any_object(description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(
            AdditionalProperties::<utoipa::openapi::Schema>::FreeForm(true),
        ))
        .description(Some(description))
        .build()
}

/// An array of `[name, value]` string pairs (a `Vec<(String, String)>` on the wire).
pub fn string_pairs() -> Array {
    let pair = ArrayBuilder::new()
        .items(ObjectBuilder::new().schema_type(Type::String))
        .min_items(Some(2))
        .max_items(Some(2));
    ArrayBuilder::new().items(pair).build()
}

/// The description of every exact decimal.
pub const DECIMAL: &str = "Exact decimal written with its exact digits (rust_decimal: at most 28 significant digits, no trailing zeros). A submitted decimal has at most 18 integer digits (magnitude below 10^18); beyond: 400.";

/// The format of every exact decimal: the OpenAPI format registry's `decimal` ("a fixed
/// point decimal number of unspecified precision and range"), for `type: number`.
pub const DECIMAL_FORMAT: &str = "decimal";

/// An exact decimal (`money::Number` on the wire: a JSON number with its exact digits).
pub fn decimal() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .format(Some(SchemaFormat::Custom(DECIMAL_FORMAT.into())))
        .description(Some(DECIMAL))
        .build()
}

/// An exact decimal or null.
pub fn decimal_or_null() -> Object {
    ObjectBuilder::new()
        .schema_type(
            [Type::Number, Type::Null]
                .into_iter()
                .collect::<SchemaType>(),
        )
        .format(Some(SchemaFormat::Custom(DECIMAL_FORMAT.into())))
        .description(Some(DECIMAL))
        .build()
}

/// A calendar day, `YYYY-MM-DD`.
pub fn date() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Date,
        )))
        .build()
}

/// A calendar day or null.
pub fn date_or_null() -> Object {
    ObjectBuilder::new()
        .schema_type(
            [Type::String, Type::Null]
                .into_iter()
                .collect::<SchemaType>(),
        )
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Date,
        )))
        .build()
}

/// A schema object written as JSON (for the few shapes a derive cannot see: raw JSON members,
/// read-only echoes). Without a `type` it admits any value.
#[allow(
    clippy::expect_used,
    reason = "only called with schema literals written in code (`schema_with` functions, fixed signature); a malformed one fails the openapi document tests"
)]
pub fn object(mut schema: serde_json::Value) -> Object {
    let typed = schema.get("type").is_some();
    if !typed {
        schema["type"] = "object".into();
    }
    let mut object: Object = serde_json::from_value(schema).expect("a schema object");
    if !typed {
        object.schema_type = SchemaType::AnyValue;
    }
    object
}

/// An array schema written as JSON (`items` and all).
#[allow(
    clippy::expect_used,
    reason = "only called with schema literals written in code (`schema_with` functions, fixed signature); a malformed one fails the openapi document tests"
)]
pub fn array(schema: serde_json::Value) -> Array {
    serde_json::from_value(schema).expect("an array schema")
}

/// A Surface B identifier.
pub fn identifier() -> Object {
    object(
        serde_json::json!({ "type": "string", "description": "Identifier (a string in Surface B)." }),
    )
}

/// A `&'static str` member of a type the server answers and reads back (see
/// [`static_word`]), named so that serde's derive does not take its `'static` for a borrow
/// (it would then deserialize only from `'static` input).
pub type Word = &'static str;

/// Most distinct words [`static_word`] keeps.
const MAX_STATIC_WORDS: usize = 4096;

/// Deserializes a `&'static str` member, a word of one of the closed sets the server renders
/// (a status, a kind, a mode), so that a type the server answers can also be read back from
/// the JSON it was stored as (a keyed write's result, which renders its answer again:
/// `store::idempotency`). Each distinct word is allocated once, for the life of the process,
/// and at most [`MAX_STATIC_WORDS`] of them (the closed sets hold a few dozen); a word past
/// that is refused.
pub fn static_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    use serde::Deserialize;
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static WORDS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let word = String::deserialize(d)?;
    let mut words = WORDS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = words.get(word.as_str()) {
        return Ok(known);
    }
    if words.len() >= MAX_STATIC_WORDS {
        return Err(serde::de::Error::custom(format!(
            "more than {MAX_STATIC_WORDS} distinct words read back"
        )));
    }
    let leaked: &'static str = Box::leak(word.into_boxed_str());
    words.insert(leaked);
    Ok(leaked)
}
