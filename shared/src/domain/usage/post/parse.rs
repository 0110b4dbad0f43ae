//! Reading one submitted usage event: its fields borrowed from the request in one pass, each
//! checked (required, type, bounds, unit, amount, times), and the stored texts made before
//! the write (so the tenant's writer is not held for them). Reads nothing stored.

use super::Erred;
use crate::domain::usage::{ErredCode, EVENT_FIELDS, MAX_ID_LEN};
use crate::money::canonical;
use crate::rating::uom::USAGE_UOMS;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;
use serde_json::value::RawValue;

/// A validated event.
#[derive(Debug)]
pub(in crate::domain::usage) struct Parsed {
    pub(in crate::domain::usage) start: DateTime<Utc>,
    /// The end, `start` when none was given.
    pub(super) end: DateTime<Utc>,
    /// `start` as stored, and the end when it differs (made here, before the write).
    pub(super) stored_start: String,
    pub(super) stored_end: Option<String>,
    /// `amount`'s canonical text, as stored.
    pub(super) amount_text: String,
    pub(in crate::domain::usage) srid: String,
    pub(in crate::domain::usage) uom: String,
    pub(in crate::domain::usage) amount: Decimal,
    pub(in crate::domain::usage) reference_id: Option<String>,
    pub(in crate::domain::usage) sequence_id: Option<String>,
}

impl Parsed {
    pub(super) fn pair(&self) -> Option<(&str, &str)> {
        Some((self.reference_id.as_deref()?, self.sequence_id.as_deref()?))
    }
}

/// The fields of one submitted event, as raw JSON borrowed from the request: read in one
/// pass into fixed slots (no per-field map), the first unknown name kept for the error. A
/// repeated name is refused (request bodies reach here through `web::parse_json`, which
/// refuses duplicate members at every depth already; this keeps the rule for any caller).
#[derive(Default)]
struct EventFields<'a> {
    /// By position in [`EVENT_FIELDS`].
    slots: [Option<&'a RawValue>; EVENT_FIELDS.len()],
    unknown: Option<String>,
    repeated: Option<&'static str>,
}

impl<'de> serde::Deserialize<'de> for EventFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
    type Value = EventFields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a usage event object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut fields = EventFields::default();
        while let Some(key) = map.next_key::<FieldName>()? {
            let value: &'de RawValue = map.next_value()?;
            match key {
                FieldName::Known(i) => {
                    if fields.slots[i].replace(value).is_some() {
                        fields.repeated.get_or_insert(EVENT_FIELDS[i]);
                    }
                }
                FieldName::Unknown(name) => {
                    fields.unknown.get_or_insert(name);
                }
            }
        }
        Ok(fields)
    }
}

/// A key of a submitted event: its position in [`EVENT_FIELDS`], or the unknown name.
enum FieldName {
    Known(usize),
    Unknown(String),
}

impl<'de> serde::Deserialize<'de> for FieldName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = FieldName;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<FieldName, E> {
                Ok(match EVENT_FIELDS.iter().position(|f| *f == v) {
                    Some(i) => FieldName::Known(i),
                    None => FieldName::Unknown(v.to_string()),
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'a> EventFields<'a> {
    /// The value of `name` (one of [`EVENT_FIELDS`]) unless absent or null.
    fn present(&self, name: &str) -> Option<&'a RawValue> {
        let i = EVENT_FIELDS.iter().position(|f| *f == name)?;
        self.slots[i].filter(|v| v.get() != "null")
    }
}

/// Validates one submitted event.
pub(in crate::domain::usage) fn parse_event<'r>(
    raw: &'r RawValue,
    tz: Tz,
) -> std::result::Result<Parsed, Erred> {
    let invalid = |m: String| (ErredCode::InvalidField, m);
    let fields: EventFields<'_> = serde_json::from_str(raw.get())
        .map_err(|_| invalid("a usage event must be a JSON object".into()))?;
    if let Some(name) = fields.repeated {
        return Err(invalid(format!("duplicate field '{name}'")));
    }
    if let Some(unknown) = &fields.unknown {
        return Err(invalid(format!(
            "unknown field '{unknown}'; a usage event has {}",
            EVENT_FIELDS.join(", ")
        )));
    }
    let present = |name: &str| fields.present(name);
    let required = |name: &str| {
        present(name).ok_or_else(|| (ErredCode::MissingField, format!("{name} is required")))
    };
    let string = |name: &str, v: &'r RawValue| {
        crate::json_text::string_text(v.get())
            .ok_or_else(|| invalid(format!("{name} must be a string, found {}", v.get())))
    };
    // The text rule of every surface (`domain::check_text`): what XML 1.0 cannot carry is
    // refused here, as an erred event, like any other bad field.
    let bounded = |name: &str, v: &'r RawValue| {
        let s = string(name, v)?.into_owned();
        if let Some(message) = crate::domain::text_chars_error(name, &s) {
            return Err(invalid(message));
        }
        if s.is_empty() || s.chars().count() > MAX_ID_LEN {
            return Err(invalid(format!(
                "{name} must be 1 to {MAX_ID_LEN} characters"
            )));
        }
        Ok(s)
    };
    let time = |name: &str, v: &'r RawValue| {
        let s = string(name, v)?;
        crate::time::parse_date_or_datetime(&s, tz)
            .ok_or_else(|| invalid(format!("{name}: {}", crate::time::not_a_date(&s))))
    };

    let start = time("start_time", required("start_time")?)?;
    let srid = bounded(
        "service_resource_identifier",
        required("service_resource_identifier")?,
    )?;
    let uom = string("usage_uom", required("usage_uom")?)?.into_owned();
    if !USAGE_UOMS.contains(&uom.as_str()) {
        return Err(invalid(format!(
            "usage_uom: '{uom}' is not one of {}",
            USAGE_UOMS.join(", ")
        )));
    }
    let amount_raw = required("usage_amount")?;
    let amount_text = amount_raw.get();
    if !amount_text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(invalid(format!(
            "usage_amount must be a number, found {amount_text}"
        )));
    }
    let amount = crate::money::parse_amount(amount_text)
        .map_err(|e| invalid(format!("usage_amount: {e}")))?;
    if amount.is_sign_negative() && !amount.is_zero() {
        return Err(invalid(format!(
            "usage_amount must not be negative, found {}",
            amount_raw.get()
        )));
    }
    let end = match present("end_time") {
        Some(v) => time("end_time", v)?,
        None => start,
    };
    if end < start {
        return Err(invalid("end_time must not be before start_time".into()));
    }
    let reference_id = present("reference_id")
        .map(|v| bounded("reference_id", v))
        .transpose()?;
    let sequence_id = present("sequence_id")
        .map(|v| bounded("sequence_id", v))
        .transpose()?;
    Ok(Parsed {
        stored_start: crate::time::to_storage(start),
        stored_end: (end != start).then(|| crate::time::to_storage(end)),
        amount_text: canonical(amount),
        start,
        end,
        srid,
        uom,
        amount,
        reference_id,
        sequence_id,
    })
}
