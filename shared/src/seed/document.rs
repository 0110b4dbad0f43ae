//! The fixture document before it is read into records: its bounds (records per kind), its
//! relative dates resolved against the tenant's clock (`time::relative`), and the JSON path
//! every refusal names (`services[3].product_id: ...`).
//!
//! Invariant: every problem found is a 400 whose message starts with the JSON path of the
//! first problem; nothing here writes.

use crate::{Error, Result};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::Value;

/// Most records of one kind (one top-level array, or `generated_services.count`) in a document.
pub const MAX_RECORDS_PER_KIND: usize = 10_000;

/// Whether member `key` holds a date (so it may be written relative to the clock): names
/// ending in `_date`, `_on` or `_at`, and `valid_from`, `valid_to`, `first_start`.
pub fn is_date_key(key: &str) -> bool {
    key.ends_with("_date")
        || key.ends_with("_on")
        || key.ends_with("_at")
        || matches!(key, "valid_from" | "valid_to" | "first_start")
}

/// Checks the bounds of `doc` and rewrites its relative dates as absolute ones.
pub fn prepare(doc: &mut Value, now: DateTime<Utc>, tz: Tz) -> Result<()> {
    let Value::Object(members) = &*doc else {
        return Err(Error::bad_request(
            "the fixture document is a JSON object (one member per kind of record)",
        ));
    };
    for (kind, value) in members {
        if let Value::Array(items) = value {
            if items.len() > MAX_RECORDS_PER_KIND {
                return Err(Error::bad_request(format!(
                    "{kind}: {} records; a document holds at most {MAX_RECORDS_PER_KIND} of each kind",
                    items.len()
                )));
            }
        }
    }
    if let Some(count) = doc
        .pointer("/generated_services/count")
        .and_then(Value::as_u64)
    {
        if count > MAX_RECORDS_PER_KIND as u64 {
            return Err(Error::bad_request(format!(
                "generated_services.count: {count}; at most {MAX_RECORDS_PER_KIND}"
            )));
        }
    }
    resolve(doc, &mut String::new(), false, now, tz)
}

fn resolve(v: &mut Value, path: &mut String, date: bool, now: DateTime<Utc>, tz: Tz) -> Result<()> {
    match v {
        Value::String(s) if date && crate::time::relative::is_relative(s) => {
            let resolved = crate::time::relative::resolve(s, now, tz).map_err(|e| {
                Error::bad_request(format!("{path}: {} {e}", crate::error::quoted(s)))
            })?;
            *s = resolved;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                resolve(item, path, date, now, tz)?;
                path.truncate(len);
            }
        }
        Value::Object(members) => {
            for (key, item) in members.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                resolve(item, path, is_date_key(key), now, tz)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `e` as a refusal of the record at `path`: a client error's message is prefixed with the
/// path (joined with a `.` when the message starts with a field name, as the domain's do:
/// `services[3]` + `product_id: no product 9` is `services[3].product_id: no product 9`).
/// A duplicate (a unique constraint) is a 400 too; other server-side errors pass unchanged.
pub fn at(path: String) -> impl FnOnce(Error) -> Error {
    move |e| match e {
        // `domain::require`'s "product 9 does not exist": the reference at fault is the
        // record's `product_id` (every reference field is named `<kind>_id`).
        Error::NotFound(m) if missing_reference(&m).is_some() => {
            let (what, id) = missing_reference(&m).unwrap_or_default();
            Error::BadRequest(format!(
                "{path}.{}_id: no {what} {id}",
                what.replace(' ', "_")
            ))
        }
        Error::BadRequest(m)
        | Error::NotFound(m)
        | Error::Conflict(m)
        | Error::PreconditionFailed(m) => {
            let field = m.split_once(": ").map(|(f, _)| f).filter(|f| {
                !f.is_empty()
                    && f.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.[]-".contains(c))
            });
            Error::BadRequest(match field {
                Some(_) => format!("{path}.{m}"),
                None => format!("{path}: {m}"),
            })
        }
        // A record that collides with one already written (a duplicate id, or a unique
        // number) is the document's fault, not the server's: SQLite's constraint text names
        // the table and column.
        Error::Internal(m) if m.contains("UNIQUE constraint failed") => {
            Error::BadRequest(format!("{path}: already exists ({m})"))
        }
        Error::Internal(m) if m.contains("FOREIGN KEY constraint failed") => {
            Error::BadRequest(format!("{path}: refers to a record that does not exist"))
        }
        // Any other rule of the schema a record breaks (NOT NULL, CHECK) is its fault too.
        Error::Internal(m) if m.contains("constraint failed") => {
            Error::BadRequest(format!("{path}: breaks a rule of its table ({m})"))
        }
        other => other,
    }
}

/// `("product", "9")` of "product 9 does not exist".
fn missing_reference(m: &str) -> Option<(&str, &str)> {
    let (what, id) = m.strip_suffix(" does not exist")?.rsplit_once(' ')?;
    let plain = what.chars().all(|c| c.is_ascii_lowercase() || c == ' ');
    (plain && !what.is_empty() && id.parse::<i64>().is_ok()).then_some((what, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_dates_are_resolved_where_dates_go_and_nowhere_else() {
        let now = DateTime::parse_from_rfc3339("2026-11-06T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut doc = serde_json::json!({
            "services": [{"start_date": "now-1M/month", "name": "now-1M/month"}],
            "generated_services": {"first_start": "now/day"}
        });
        prepare(&mut doc, now, chrono_tz::UTC).unwrap();
        assert_eq!(doc["services"][0]["start_date"], "2026-10-01");
        assert_eq!(doc["services"][0]["name"], "now-1M/month");
        assert_eq!(doc["generated_services"]["first_start"], "2026-11-06");
        let mut bad = serde_json::json!({"invoices": [{}, {"due_date": "now+2q"}]});
        let e = prepare(&mut bad, now, chrono_tz::UTC)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("invoices[1].due_date: 'now+2q'"), "{e}");
    }

    #[test]
    fn records_per_kind_are_bounded() {
        let now = crate::time::now();
        let mut doc =
            serde_json::json!({"products": vec![serde_json::json!({}); MAX_RECORDS_PER_KIND + 1]});
        let e = prepare(&mut doc, now, chrono_tz::UTC)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("products: 10001 records"), "{e}");
    }

    #[test]
    fn paths_join_field_names() {
        let e = at("services[3]".into())(Error::bad_request("product_id: not a number"));
        assert_eq!(e.to_string(), "services[3].product_id: not a number");
        let e = at("services[3]".into())(Error::not_found("billing account 9 does not exist"));
        assert_eq!(
            e.to_string(),
            "services[3].billing_account_id: no billing account 9"
        );
        let e = at("services[3]".into())(Error::conflict("a service with id 4 exists"));
        assert_eq!(e.to_string(), "services[3]: a service with id 4 exists");
    }
}
