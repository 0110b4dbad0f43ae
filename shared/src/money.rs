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

/// ISO 4217 codes the platform accepts wherever a currency appears.
pub const CURRENCY_CODES: &[&str] = &[
    "USD", "GBP", "EUR", "SEK", "NOK", "DKK", "CAD", "AUD", "ZAR", "NZD", "MXN", "INR", "JPY",
    "SAR", "QAR", "EGP", "AED", "BHD", "KWD", "OMR", "HKD", "CHF", "ILS", "CNY", "BRL", "PLN",
    "COP", "PEN", "RUB", "SGD", "IDR", "MYR", "KRW", "TWD", "PKR", "ARS", "CLP", "CRC", "CZK",
    "HUF", "ISK", "PHP", "RON", "THB", "TRY", "BWP", "NGN",
];

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
/// zeros after the point, no exponent; exactly what `d.normalize().to_string()` writes.
///
/// Written from the integer mantissa and the scale, for posting throughput: writes a few of these
/// per event, and rust_decimal's `Display` divides the 96-bit mantissa digit by digit (5% of
/// a bulk call's server time). A test compares the two on random decimals.
pub fn canonical(d: Decimal) -> String {
    let mut out = String::new();
    push_canonical(&mut out, d);
    out
}

/// [`canonical`], appended to `out`: posting writes a call's decimals into one buffer. The
/// digits are counted first, so a decimal below 1 gets its `0.` and leading zeros before its
/// digits, with no text made and moved aside.
pub fn push_canonical(out: &mut String, d: Decimal) {
    use std::fmt::Write;
    let d = d.normalize();
    let magnitude = d.mantissa().unsigned_abs();
    if magnitude == 0 {
        out.push('0');
        return;
    }
    if d.is_sign_negative() {
        out.push('-');
    }
    let digits = magnitude.ilog10() as usize + 1;
    let scale = d.scale() as usize;
    if scale >= digits {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', scale - digits));
    }
    // Writing into a String cannot fail.
    let _ = match u64::try_from(magnitude) {
        Ok(small) => write!(out, "{small}"),
        Err(_) => write!(out, "{magnitude}"),
    };
    if 0 < scale && scale < digits {
        out.insert(out.len() - scale, '.');
    }
}

/// Serializes a decimal as a JSON number with its exact digits (`serialize_with`).
pub fn serialize_number<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    let raw = RawValue::from_string(canonical(*d)).map_err(serde::ser::Error::custom)?;
    raw.serialize(s)
}

/// The bound on every decimal a client submits: at most 18 integer digits (the magnitude
/// is below 10^18), up to 28 decimals (rust_decimal's scale). rust_decimal holds about
/// 7.9 * 10^28, so with this bound sums and products of accepted amounts (of rates and
/// amounts, of many events into a total) stay far from its range, and what overflows anyway
/// is refused by checked arithmetic instead of panicking.
pub const MAX_INTEGER_DIGITS: u32 = 18;

/// Whether `d` is within [`MAX_INTEGER_DIGITS`].
pub fn within_bounds(d: Decimal) -> bool {
    d.abs() < Decimal::from(10_i64.pow(MAX_INTEGER_DIGITS))
}

/// Parses a submitted decimal (JSON number text or XML attribute) and checks its bound;
/// the error says what is wrong, for the caller to prefix with the field's name.
pub fn parse_amount(text: &str) -> Result<Decimal, String> {
    let d = parse_decimal(text)
        .ok_or_else(|| format!("{} is not a decimal number", crate::error::quoted(text)))?;
    if !within_bounds(d) {
        return Err(format!(
            "{text} has more than {MAX_INTEGER_DIGITS} integer digits"
        ));
    }
    Ok(d)
}

/// `a + b`, or an error naming `what` when the sum leaves [`MAX_INTEGER_DIGITS`] (or
/// rust_decimal's range): a total that large is refused rather than stored.
pub fn checked_add(a: Decimal, b: Decimal, what: &str) -> crate::Result<Decimal> {
    a.checked_add(b)
        .filter(|s| within_bounds(*s))
        .ok_or_else(|| {
            crate::Error::bad_request(format!(
                "{what} would exceed {MAX_INTEGER_DIGITS} integer digits"
            ))
        })
}

/// Checks a raw JSON value's text is a number and parses it exactly, within the bound.
fn decimal_from_raw(text: &str) -> Result<Decimal, String> {
    if !text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(format!("expected a number, found {text}"));
    }
    parse_amount(text)
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

    proptest::proptest! {
        /// The fast canonical text is rust_decimal's own, for every sign, scale and size.
        #[test]
        fn canonical_is_the_normalized_display(
            lo in proptest::prelude::any::<u32>(),
            mid in proptest::prelude::any::<u32>(),
            hi in proptest::prelude::any::<u32>(),
            negative in proptest::prelude::any::<bool>(),
            scale in 0u32..=28,
            small in proptest::prelude::any::<bool>(),
        ) {
            // Half the cases with a small mantissa, where trailing zeros and leading zeros
            // after the point are common.
            let (mid, hi) = if small { (0, 0) } else { (mid, hi) };
            let d = Decimal::from_parts(lo, mid, hi, negative, scale);
            proptest::prop_assert_eq!(canonical(d), d.normalize().to_string());
        }
    }

    #[test]
    fn canonical_edges() {
        for (text, expected) in [
            ("0", "0"),
            ("-0.000", "0"),
            ("0.0001000", "0.0001"),
            ("-12.50", "-12.5"),
            ("100", "100"),
            (
                "79228162514264337593543950335",
                "79228162514264337593543950335",
            ),
            (
                "-0.0000000000000000000000000001",
                "-0.0000000000000000000000000001",
            ),
        ] {
            let d = Decimal::from_str(text).unwrap();
            assert_eq!(canonical(d), expected, "{text}");
            assert_eq!(canonical(d), d.normalize().to_string(), "{text}");
        }
    }

    #[derive(Serialize, Deserialize)]
    struct Amount {
        #[serde(
            serialize_with = "serialize_number",
            deserialize_with = "deserialize_number"
        )]
        v: Decimal,
    }

    #[test]
    fn amounts_are_bounded_and_sums_checked() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(
            parse_amount("-999999999999999999.5").unwrap(),
            d("-999999999999999999.5")
        );
        assert!(parse_amount("1000000000000000000").is_err());
        assert!(parse_amount("79228162514264337593543950335").is_err());
        assert!(parse_amount("ten").is_err());
        assert!(serde_json::from_str::<Amount>(r#"{"v": 1e18}"#).is_err());
        let max = Decimal::MAX;
        assert!(checked_add(max, max, "t").is_err());
        assert!(checked_add(d("999999999999999999"), Decimal::ONE, "t").is_err());
        assert_eq!(checked_add(d("1.5"), d("-2"), "t").unwrap(), d("-0.5"));
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
