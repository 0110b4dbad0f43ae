//! Exact decimals: JSON number (de)serialization without f64, and the SQLite DECIMAL collation
//! that orders and compares decimal strings exactly.
//!
//! serde_json's `arbitrary_precision` would also give exact numbers, but it breaks untagged
//! enums (lambda_http's request deserialization uses them), so decimals travel through
//! `RawValue` instead: the number's text is written and read verbatim.

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::cmp::Ordering;
use std::str::FromStr;

/// Parses a JSON number's text (or a plain decimal string) into an exact decimal.
pub fn parse_decimal(text: &str) -> Option<Decimal> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    Decimal::from_str(t)
        .or_else(|_| Decimal::from_scientific(t))
        .ok()
}

/// The canonical text of a decimal as stored in SQLite and written into JSON: no trailing
/// zeros after the point, no exponent.
pub fn canonical(d: Decimal) -> String {
    d.normalize().to_string()
}

/// Serializes a decimal as a JSON number with its exact digits (`serialize_with`).
pub fn serialize_number<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    let raw = RawValue::from_string(canonical(*d)).map_err(serde::ser::Error::custom)?;
    raw.serialize(s)
}

/// Checks a raw JSON value's text is a number and parses it exactly.
fn decimal_from_raw(text: &str) -> Result<Decimal, String> {
    if !text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(format!("expected a number, found {text}"));
    }
    parse_decimal(text).ok_or_else(|| format!("number out of range: {text}"))
}

/// Deserializes a JSON number (not a string) into an exact decimal (`deserialize_with`).
pub fn deserialize_number<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    let raw: Box<RawValue> = Deserialize::deserialize(d)?;
    decimal_from_raw(raw.get()).map_err(serde::de::Error::custom)
}

/// Deserializes an optional JSON number (null allowed) into an exact decimal.
pub fn deserialize_opt_number<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Decimal>, D::Error> {
    let raw: Option<Box<RawValue>> = Deserialize::deserialize(d)?;
    match raw {
        Some(raw) if raw.get() != "null" => decimal_from_raw(raw.get())
            .map(Some)
            .map_err(serde::de::Error::custom),
        _ => Ok(None),
    }
}

/// A JSON number holding an exact decimal; use as a field type in request/response structs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Number(pub Decimal);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_number(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_number(d).map(Number)
    }
}

/// The DECIMAL collation: compares two texts as decimals when both parse, else bytewise.
/// Total and panic-free, as SQLite requires of a collation.
pub fn decimal_collation(a: &str, b: &str) -> Ordering {
    match (Decimal::from_str(a), Decimal::from_str(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

/// Reads a decimal stored as TEXT by SQLite (tolerating integers and reals in old rows).
pub fn from_sql_text(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Decimal> {
    use rusqlite::types::{FromSqlError, ValueRef};
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(parse_decimal)
            .ok_or(FromSqlError::InvalidType),
        ValueRef::Integer(i) => Ok(Decimal::from(i)),
        _ => Err(FromSqlError::InvalidType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Amount {
        #[serde(
            serialize_with = "serialize_number",
            deserialize_with = "deserialize_number"
        )]
        v: Decimal,
    }

    #[test]
    fn numbers_round_trip_exactly() {
        let a: Amount = serde_json::from_str(r#"{"v": 0.1000000000000000000000000001}"#).unwrap();
        assert_eq!(a.v.to_string(), "0.1000000000000000000000000001");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"v":0.1000000000000000000000000001}"#
        );
        assert!(serde_json::from_str::<Amount>(r#"{"v": "1"}"#).is_err());
        assert!(serde_json::from_str::<Amount>(r#"{"v": true}"#).is_err());
    }

    #[test]
    fn collation_orders_numerically() {
        assert_eq!(decimal_collation("10", "9.5"), Ordering::Greater);
        assert_eq!(decimal_collation("-1", "0"), Ordering::Less);
        assert_eq!(decimal_collation("abc", "abd"), Ordering::Less);
    }
}
