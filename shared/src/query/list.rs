//! The list machinery every Surface B list shares: named filters and `filter`, `sort`,
//! `page_number`/`page_size`, `return` and `Prefer`, `omit_total_count`, and the answer with
//! ETag (304 on a matching If-None-Match), X-total-count, X-element-count, X-total-pages and
//! Preference-Applied.
//!
//! Choices where the interface is silent: `page_number` 0 is the first page, like 1;
//! `page_size` 0 answers no records but still counts them; unknown query parameters are
//! ignored; a `return` parameter wins over a `Prefer` header.

use super::ast::{CmpOp, Expr, Field, Value as AstValue};
use super::compile::{compile_filter, compile_sort, SqlFragment};
use super::{parse, FieldSpec, QueryError};
use crate::paging::{int_param, Page};
use crate::{Error, Result};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;
use rusqlite::Connection;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Largest `page_size` of a Surface B list.
pub const MAX_PAGE_SIZE: i64 = 50;
/// Most objects of a nested collection rendered inside one record.
pub const MAX_NESTED: usize = 50;

/// How much of each record to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Scalar fields; nested references reduced to `{id}`; nested collections left out.
    Simple,
    /// Everything (the default).
    Full,
}

/// What a resource's list reads from, and which of its fields are named filters.
#[derive(Debug, Clone, Copy)]
pub struct ListSource {
    /// What messages call the resource, e.g. `agreement service`.
    pub noun: &'static str,
    /// The filter/sort whitelist.
    pub fields: &'static [FieldSpec],
    /// Fields also accepted as query parameters (`name=value` means `name EQ 'value'`).
    pub named_filters: &'static [&'static str],
    /// `FROM` clause (tables and joins), a compile-time constant.
    pub from: &'static str,
    /// The primary key expression: the default sort and the tiebreak.
    pub id: &'static str,
}

/// A parsed, validated list request.
#[derive(Debug, Clone)]
pub struct ListParams {
    /// The WHERE condition (named filters AND filter AND any scope).
    pub condition: SqlFragment,
    /// The ORDER BY list.
    pub order_by: String,
    /// The page asked for (number normalized to >= 1).
    pub page: Page,
    /// The representation asked for.
    pub shape: Shape,
    /// The `Preference-Applied` value to answer, when a Prefer return preference was sent.
    pub preference_applied: Option<&'static str>,
    /// `omit_total_count=TRUE`: leave out X-total-count and X-total-pages.
    pub omit_total_count: bool,
}

/// Converts a [`QueryError`] of a parameter into a 400 naming the parameter.
fn param_error(param: &str, e: QueryError) -> Error {
    Error::bad_request(format!("{param}: {e}"))
}

/// Reads `return` and `Prefer: return=...`: the shape and the Preference-Applied answer.
pub fn read_shape(
    params: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<(Shape, Option<&'static str>)> {
    let preferred = headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split([',', ';']))
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("return")
                .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
        })
        .find_map(|v| match v.as_str() {
            "minimal" => Some(Shape::Simple),
            "representation" => Some(Shape::Full),
            _ => None,
        });
    let explicit = match params.get("return").map(|v| v.trim().to_ascii_uppercase()) {
        None => None,
        Some(v) if v == "SIMPLE" => Some(Shape::Simple),
        Some(v) if v == "FULL" => Some(Shape::Full),
        Some(_) => {
            return Err(Error::bad_request(format!(
                "return: '{}' is not one of SIMPLE, FULL",
                params.get("return").map(String::as_str).unwrap_or_default()
            )))
        }
    };
    let shape = explicit.or(preferred).unwrap_or(Shape::Full);
    let applied = preferred.map(|_| match shape {
        Shape::Simple => "return=minimal",
        Shape::Full => "return=representation",
    });
    Ok((shape, applied))
}

impl ListParams {
    /// Reads and validates a list request against `source`; date-times are read in `tz`.
    /// `defaults` are named-filter values applied when the client names neither the
    /// parameter nor the field in `filter` (e.g. bill batches: status ACTIVE).
    pub fn parse(
        params: &HashMap<String, String>,
        headers: &HeaderMap,
        source: &ListSource,
        tz: Tz,
        defaults: &[(&str, &str)],
    ) -> Result<ListParams> {
        let filter = match params.get("filter").map(|f| f.trim()) {
            Some(f) if !f.is_empty() => Some(parse(f).map_err(|e| param_error("filter", e))?),
            _ => None,
        };
        let mut condition = SqlFragment::always();
        let mut named: Vec<&str> = vec!["id"];
        named.extend(source.named_filters.iter().copied());
        for name in named {
            let value = match params.get(name) {
                Some(v) => v.as_str(),
                None => match defaults.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) if !filter.as_ref().is_some_and(|f| f.mentions(name)) => v,
                    _ => continue,
                },
            };
            let expr = Expr::Compare {
                field: Field {
                    name: name.to_string(),
                    pos: 1,
                },
                op: CmpOp::Eq,
                value: AstValue {
                    text: value.to_string(),
                    pos: 1,
                },
            };
            let fragment = compile_filter(&expr, source.fields, tz)
                .map_err(|e| Error::bad_request(format!("{name}: {}", e.message)))?;
            condition = condition.and(fragment);
        }
        if let Some(f) = &filter {
            condition = condition
                .and(compile_filter(f, source.fields, tz).map_err(|e| param_error("filter", e))?);
        }
        let order_by = compile_sort(
            params.get("sort").map(String::as_str).unwrap_or(""),
            source.fields,
            source.id,
        )
        .map_err(|e| param_error("sort", e))?;
        let number = int_param(params, "page_number", 1, 0, i64::from(i32::MAX))?.max(1);
        let size = int_param(params, "page_size", MAX_PAGE_SIZE, 0, MAX_PAGE_SIZE)?;
        let (shape, preference_applied) = read_shape(params, headers)?;
        let omit_total_count = match params.get("omit_total_count") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                return Err(Error::bad_request(format!(
                    "omit_total_count: '{v}' is not TRUE or FALSE"
                )))
            }
        };
        Ok(ListParams {
            condition,
            order_by,
            page: Page { number, size },
            shape,
            preference_applied,
            omit_total_count,
        })
    }

    /// Narrows the list to a fixed scope (e.g. the parent of a nested collection); `sql` is
    /// a compile-time constant with `?` marks for `params`.
    pub fn scope(mut self, sql: &str, params: Vec<rusqlite::types::Value>) -> ListParams {
        self.condition = self.condition.and(SqlFragment {
            sql: sql.to_string(),
            params,
        });
        self
    }

    /// Reads one page of ids of `source` matching this request, and the total (unless
    /// omitted). Callers load the full records of those ids.
    pub fn fetch_ids(
        &self,
        conn: &Connection,
        source: &ListSource,
    ) -> Result<(Vec<i64>, Option<i64>)> {
        let (limit, offset) = self.page.limit_offset();
        let ids = if limit == 0 {
            Vec::new()
        } else {
            let sql = format!(
                "SELECT {} FROM {} WHERE {} ORDER BY {} LIMIT ? OFFSET ?",
                source.id, source.from, self.condition.sql, self.order_by
            );
            let mut params = self.condition.params.clone();
            params.push(limit.into());
            params.push(offset.into());
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<i64>>>()?
        };
        let total = if self.omit_total_count {
            None
        } else {
            let sql = format!(
                "SELECT COUNT(*) FROM {} WHERE {}",
                source.from, self.condition.sql
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            Some(stmt.query_row(
                rusqlite::params_from_iter(self.condition.params.iter()),
                |r| r.get(0),
            )?)
        };
        Ok((ids, total))
    }
}

/// Reduces a record to its SIMPLE form: nested references keep only `id`, nested
/// collections are left out, scalars stay (number texts untouched, so amounts stay exact).
pub fn simplify(record: &RawValue) -> Result<Box<RawValue>> {
    let Ok(members) = object_members(record) else {
        return Ok(record.to_owned());
    };
    let mut out: Vec<String> = Vec::with_capacity(members.len());
    for (key, value) in members {
        let text = value.get().trim_start();
        let rendered = if text.starts_with('[') {
            continue;
        } else if text.starts_with('{') {
            let inner: serde_json::Map<String, Value> = serde_json::from_str(text)?;
            serde_json::to_string(
                &serde_json::json!({ "id": inner.get("id").cloned().unwrap_or(Value::Null) }),
            )?
        } else {
            text.to_string()
        };
        out.push(format!("{}:{rendered}", serde_json::to_string(&key)?));
    }
    Ok(RawValue::from_string(format!("{{{}}}", out.join(",")))?)
}

/// An object's members with their raw values, in document order.
fn object_members(record: &RawValue) -> Result<Vec<(String, Box<RawValue>)>> {
    struct Pairs(Vec<(String, Box<RawValue>)>);
    impl<'de> serde::Deserialize<'de> for Pairs {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Pairs;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> std::result::Result<Pairs, A::Error> {
                    let mut out = Vec::new();
                    while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                        out.push(entry);
                    }
                    Ok(Pairs(out))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    let pairs: Pairs = serde_json::from_str(record.get())?;
    Ok(pairs.0)
}

/// Serializes a record in `shape`, exactly (amounts keep their digits).
pub fn to_raw<T: serde::Serialize>(record: &T, shape: Shape) -> Result<Box<RawValue>> {
    let full = serde_json::value::to_raw_value(record)?;
    match shape {
        Shape::Full => Ok(full),
        Shape::Simple => simplify(&full),
    }
}

/// A strong ETag over the exact bytes of a body and of what headers carry beside it.
fn etag_of(body: &[u8], extra: &str) -> String {
    let digest = Sha256::new()
        .chain_update(body)
        .chain_update(extra)
        .finalize();
    format!("\"{}\"", hex::encode(&digest[..16]))
}

/// Whether an If-None-Match header matches `etag` (a list of tags, weak or strong, or `*`).
fn none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

/// A JSON answer with an ETag; 304 without a body when If-None-Match matches it. `extra`
/// is what the answer's other headers say (e.g. the total), so that it changes the tag.
pub fn json_with_etag(
    status: StatusCode,
    bytes: Vec<u8>,
    extra: &str,
    headers: &HeaderMap,
) -> Response {
    let etag = etag_of(&bytes, extra);
    let mut response = if status == StatusCode::OK && none_match(headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

/// Adds `Preference-Applied` when a Prefer return preference was honoured.
pub fn with_preference(mut response: Response, applied: Option<&'static str>) -> Response {
    if let Some(a) = applied {
        response
            .headers_mut()
            .insert("Preference-Applied", HeaderValue::from_static(a));
    }
    response
}

/// The answer to a list request: the records (already shaped) as a JSON array with ETag,
/// X-element-count, X-total-count and X-total-pages (the last two unless omitted) and
/// Preference-Applied.
pub fn list_response(
    records: Vec<Box<RawValue>>,
    total: Option<i64>,
    params: &ListParams,
    headers: &HeaderMap,
) -> Response {
    let count = records.len();
    let bytes = serde_json::to_vec(&records).unwrap_or_default();
    let mut response = json_with_etag(StatusCode::OK, bytes, &format!("{total:?}"), headers);
    let h = response.headers_mut();
    h.insert("X-element-count", HeaderValue::from(count));
    if let Some(total) = total {
        h.insert("X-total-count", HeaderValue::from(total));
        h.insert(
            "X-total-pages",
            HeaderValue::from(params.page.total_pages(total)),
        );
    }
    with_preference(response, params.preference_applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn shape_from_return_and_prefer() {
        let mut h = HeaderMap::new();
        assert_eq!(read_shape(&params(&[]), &h).unwrap(), (Shape::Full, None));
        h.insert(
            "prefer",
            HeaderValue::from_static("respond-async, return=minimal"),
        );
        assert_eq!(
            read_shape(&params(&[]), &h).unwrap(),
            (Shape::Simple, Some("return=minimal"))
        );
        assert_eq!(
            read_shape(&params(&[("return", "FULL")]), &h).unwrap(),
            (Shape::Full, Some("return=representation"))
        );
        assert!(read_shape(&params(&[("return", "ALL")]), &h).is_err());
    }

    #[test]
    fn simple_form_keeps_scalars_and_reference_ids() {
        let full = RawValue::from_string(
            r#"{"id":"1","name":"x","agreement":{"id":"2","name":"y"},"items":[{"id":"3"}],"amount":0.1000000000000000000000000001,"gone":null}"#.into(),
        )
        .unwrap();
        assert_eq!(
            simplify(&full).unwrap().get(),
            r#"{"id":"1","name":"x","agreement":{"id":"2"},"amount":0.1000000000000000000000000001,"gone":null}"#
        );
    }

    #[test]
    fn etag_matching() {
        let mut h = HeaderMap::new();
        let first = json_with_etag(StatusCode::OK, b"[1]".to_vec(), "", &h);
        let tag = first.headers()[header::ETAG].clone();
        h.insert(header::IF_NONE_MATCH, tag.clone());
        let again = json_with_etag(StatusCode::OK, b"[1]".to_vec(), "", &h);
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let changed = json_with_etag(StatusCode::OK, b"[1]".to_vec(), "total 2", &h);
        assert_eq!(changed.status(), StatusCode::OK);
    }
}
