//! The fixture document before it is read into records: its bounds (records per kind, ids),
//! its closed sets (`sets`: statuses, types, units, currencies, ...), its relative dates resolved against the tenant's clock (`time::relative`), and the JSON
//! path every refusal names (`services[3].product_id: ...`).
//!
//! Invariant: every problem found is a 400 whose message starts with the JSON path of the
//! first problem; nothing here writes.

use crate::{Error, Result};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::Value;

/// Most records of one kind (one top-level array, or `generated_services.count`) in a document.
pub const MAX_RECORDS_PER_KIND: usize = 10_000;

/// Default of the most records one document holds in all (`Config::max_fixture_records`):
/// creating records costs about 1 ms each in a debug build, so 20,000 finish well within the
/// default request deadline (30 s) there, and a document is refused up front rather than cut
/// off by the deadline halfway (docs/fixtures.md, "Time").
pub const DEFAULT_MAX_DOCUMENT_RECORDS: u64 = 20_000;

/// The records of `doc` as applying it costs them, counted as its export would count them:
/// every object in a list at any depth (a top-level record, a service's resource, a usage
/// rule's tier, ...), and two for each service `generated_services` numbers (the service and
/// its resource). Lists of ids or names are not records.
pub fn records_in(doc: &Value) -> u64 {
    fn objects(v: &Value, in_list: bool) -> u64 {
        match v {
            Value::Array(items) => items.iter().map(|i| objects(i, true)).sum(),
            Value::Object(members) => {
                u64::from(in_list) + members.values().map(|m| objects(m, false)).sum::<u64>()
            }
            _ => 0,
        }
    }
    let generated = doc
        .pointer("/generated_services/count")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    objects(doc, false).saturating_add(generated.saturating_mul(2))
}

/// Refuses `doc` when it holds more than `max` records ([`records_in`]); checked before
/// anything is done with it (no tenant created, nothing written), since a larger apply may
/// not finish within the request deadline.
pub fn check_records(doc: &Value, max: u64) -> Result<()> {
    let n = records_in(doc);
    if n > max {
        return Err(Error::bad_request(format!(
            "the fixture document holds {n} records (every object of a list, at any depth, and \
             two for each service of generated_services); at most {max} are applied in one \
             request (SANDBOX_MAX_FIXTURE_RECORDS), so that it finishes within the request \
             deadline: split it into documents applied one after another"
        )));
    }
    Ok(())
}

/// The largest id a document may give or name: 2^53, the largest of a run of whole numbers
/// a JSON number holds exactly in every client (a double). The smallest is 1.
pub const MAX_ID: i64 = 1 << 53;

/// What a member holds, by its name (and its parent's path).
#[derive(Clone, Copy, PartialEq)]
enum Field {
    /// A date, which may be relative to the clock ([`is_date_key`]).
    Date,
    /// An id or a list of ids ([`is_id_key`]): each 1..=[`MAX_ID`].
    Id,
    Other,
}

/// Whether member `key` of the object at `path` holds an id or a list of ids: a record's
/// `id`, a reference (`<kind>_id`), an id list (`<kind>_ids`), `generated_services`'
/// `first_id` and its `products` (product and agreement id pairs). Strings are not ids
/// (`conversion_rate_set_id` is a name); the loader's types refuse a string where an id goes.
pub fn is_id_key(path: &str, key: &str) -> bool {
    key == "id"
        || key.ends_with("_id")
        || key.ends_with("_ids")
        || (path == "generated_services" && key == "products")
}

/// `n` at `path` as an id, or the refusal naming the path and the bound.
fn check_id(path: &str, n: &serde_json::Number) -> Result<i64> {
    n.as_i64()
        .filter(|id| (1..=MAX_ID).contains(id))
        .ok_or_else(|| {
            Error::bad_request(format!(
                "{path}: {n} is not an id; ids are whole numbers from 1 to {MAX_ID} (2^53)"
            ))
        })
}

/// Whether member `key` holds a date (so it may be written relative to the clock): names
/// ending in `_date`, `_on` or `_at`, and `valid_from`, `valid_to`, `first_start`.
pub fn is_date_key(key: &str) -> bool {
    key.ends_with("_date")
        || key.ends_with("_on")
        || key.ends_with("_at")
        || matches!(key, "valid_from" | "valid_to" | "first_start")
}

/// Checks the bounds of `doc` (records per kind, ids) and rewrites its relative dates as
/// absolute ones.
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
    let count = doc
        .pointer("/generated_services/count")
        .and_then(Value::as_u64);
    if let Some(count) = count {
        if count > MAX_RECORDS_PER_KIND as u64 {
            return Err(Error::bad_request(format!(
                "generated_services.count: {count}; at most {MAX_RECORDS_PER_KIND}"
            )));
        }
    }
    super::sets::check(doc)?;
    resolve(doc, &mut String::new(), Field::Other, now, tz)?;
    // The ids `generated_services` numbers: first_id (an id, checked above) and the count-1
    // after it.
    if let (Some(first), Some(count)) = (
        doc.pointer("/generated_services/first_id")
            .and_then(Value::as_i64),
        count.and_then(|c| i64::try_from(c).ok()),
    ) {
        if count > 0 && first + (count - 1) > MAX_ID {
            return Err(Error::bad_request(format!(
                "generated_services.first_id: {first} + count {count} numbers ids past the \
                 largest, {MAX_ID} (2^53); ids are whole numbers from 1 to {MAX_ID}"
            )));
        }
    }
    Ok(())
}

fn resolve(
    v: &mut Value,
    path: &mut String,
    field: Field,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<()> {
    match v {
        Value::String(s) if field == Field::Date && crate::time::relative::is_relative(s) => {
            let resolved = crate::time::relative::resolve(s, now, tz).map_err(|e| {
                Error::bad_request(format!("{path}: {} {e}", crate::error::quoted(s)))
            })?;
            *s = resolved;
        }
        Value::Number(n) if field == Field::Id => {
            check_id(path, n)?;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                resolve(item, path, field, now, tz)?;
                path.truncate(len);
            }
        }
        Value::Object(members) => {
            for (key, item) in members.iter_mut() {
                let field = if is_date_key(key) {
                    Field::Date
                } else if is_id_key(path, key) {
                    Field::Id
                } else {
                    Field::Other
                };
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                resolve(item, path, field, now, tz)?;
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
    fn records_are_every_object_of_a_list_at_any_depth_and_the_generated_services() {
        let doc = serde_json::json!({
            "products": [{"id": 1}, {"id": 2}],
            "usage_rules": [{"id": 1, "rows": [{"from": 0}, {"from": 10}]}],
            "agreements": [{"id": 1, "product_ids": [1, 2]}],
            "generated_services": {"count": 7, "products": [[1, 1]]},
        });
        assert_eq!(records_in(&doc), 2 + 1 + 2 + 1 + 2 * 7);
        assert!(check_records(&doc, 20).is_ok());
        let refused = check_records(&doc, 19).unwrap_err().to_string();
        assert!(refused.contains("holds 20 records") && refused.contains("at most 19"));
    }

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
    fn ids_are_bounded_to_1_through_2_pow_53_naming_their_path() {
        let now = crate::time::now();
        let check = |doc: serde_json::Value| {
            let mut doc = doc;
            prepare(&mut doc, now, chrono_tz::UTC).map_err(|e| e.to_string())
        };
        for bad in [
            serde_json::json!(0),
            serde_json::json!(-5),
            serde_json::json!(MAX_ID + 1),
            serde_json::json!(i64::MAX),
            serde_json::json!(u64::MAX),
            serde_json::json!(1.5),
        ] {
            let doc = serde_json::json!({"products": [{"id": 1}, {"id": bad}]});
            let e = check(doc).unwrap_err();
            assert!(e.starts_with("products[1].id: "), "{e}");
            assert!(e.contains("from 1 to 9007199254740992"), "{e}");
        }
        let e = check(serde_json::json!({"ledgers": [{"billing_account_category_ids": [1, 0]}]}))
            .unwrap_err();
        assert!(
            e.starts_with("ledgers[0].billing_account_category_ids[1]: 0"),
            "{e}"
        );
        let e =
            check(serde_json::json!({"generated_services": {"products": [[1, -2]]}})).unwrap_err();
        assert!(
            e.starts_with("generated_services.products[0][1]: -2"),
            "{e}"
        );
        let e =
            check(serde_json::json!({"generated_services": {"first_id": MAX_ID - 1, "count": 3}}))
                .unwrap_err();
        assert!(e.starts_with("generated_services.first_id: "), "{e}");
        // The bound itself, the range's last id, and names that end in _id but are strings.
        check(serde_json::json!({
            "products": [{"id": MAX_ID}],
            "generated_services": {"first_id": MAX_ID - 2, "count": 3},
            "ledgers": [{"conversion_rate_set_id": "RATES-0"}]
        }))
        .unwrap();
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
