//! Surface B's request bodies that name its records: nested references read by their `id`
//! ([`RefIn`]), the read-only members a PUT body may echo back ([`echo`], [`check_echoed`]),
//! and per resource the bodies of its writes, turned into the domain's typed inputs. What
//! a record reads as (its list source and loader) is `shared::domain::lists`; the rules of
//! every write are `shared::domain`.

pub mod agreement_services;
pub mod bill_batches;
pub mod true_ups;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use shared::{Error, Result};

/// A nested reference in a request body: the object GET renders (`{"id": "2", "name": ...}`)
/// or just `{"id": 2}`. Its `id` (a string or a number) is what is used; the other members
/// describe the referenced record and are ignored, so a client may send back what it read.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[schema(
    description = "A nested reference: its id is used; the other members of the object GET renders (name, sku, ...) may be sent back and are ignored."
)]
pub struct RefIn {
    #[schema(value_type = IdIn)]
    id: IdIn,
}

impl RefIn {
    /// The referenced id: 400 naming `field` when it is not an identifier.
    pub fn value(&self, field: &str) -> Result<i64> {
        self.id.value(field)
    }
}

/// An identifier written as a string or a number.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
enum IdIn {
    Text(String),
    Number(i64),
}

impl IdIn {
    fn value(&self, field: &str) -> Result<i64> {
        match self {
            IdIn::Number(n) => Ok(*n),
            IdIn::Text(t) => t.trim().parse().map_err(|_| {
                Error::bad_request(format!(
                    "{field}.id: {} is not an identifier",
                    shared::error::quoted(t)
                ))
            }),
        }
    }
}

/// Deserializes a read-only member a PUT body echoes back: present (null included) is
/// `Some`, absent is `None` (with `#[serde(default)]`).
pub fn echo<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Whether a read-only member sent back says the same as the stored record's rendering:
/// equal JSON, the same instant written with another offset, an id as a number or a
/// string, or a reference with the same `id`.
fn same(sent: &Value, stored: &Value) -> bool {
    match (sent, stored) {
        _ if sent == stored => true,
        (Value::String(a), Value::String(b)) => {
            let instant = |t: &str| chrono::DateTime::parse_from_rfc3339(t.trim()).ok();
            instant(a).is_some() && instant(a) == instant(b)
        }
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim() == n.to_string()
        }
        (Value::Object(a), Value::Object(b)) => a
            .get("id")
            .zip(b.get("id"))
            .is_some_and(|(x, y)| same(x, y)),
        _ => false,
    }
}

/// Surface B's rule for the read-only members of a PUT body (the members GET renders that
/// no PUT sets): each one sent back must say what the stored record says (`stored`, its
/// FULL rendering; see [`same`]), else 400 naming it. Equal ones are ignored, so a client
/// may PUT back the whole body it read; a different one is refused rather than dropped,
/// since the client evidently meant to change something a PUT cannot change.
pub fn check_echoed(echoed: &[(&str, &Value)], stored: &Value) -> Result<()> {
    for (name, sent) in echoed {
        let current = stored.get(*name).unwrap_or(&Value::Null);
        if !same(sent, current) {
            return Err(Error::bad_request(format!(
                "{name} is read-only: it is {current}, a PUT cannot change it to {sent}"
            )));
        }
    }
    Ok(())
}
