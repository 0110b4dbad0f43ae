//! The HTTP side of lists and single reads: a list request read off query parameters and
//! headers into the engine's typed [`PageQuery`] (`crate::query::list`), and answers with
//! ETag (304 on a matching If-None-Match), the paging headers, `return`/`Prefer` shapes and
//! Preference-Applied. The engine knows nothing of this; the surfaces know nothing of SQL.
//!
//! Each surface names its paging parameters, limits and count headers differently; a
//! [`Paging`] holds one surface's convention ([`BILLING_PAGING`], [`REVENUE_PAGING`],
//! [`LEGACY_PAGING`]), and [`read_page`] reads a page under it. A named filter's value
//! given as its own query parameter (Surfaces A and C: `key=value`) is read by
//! [`filter_value`] in the words of the surface it came to; Surface B reads its named
//! filters through the query language (`Selection::compile`).
//!
//! Surface B's choices where the interface is silent: `page_number` 0 is the first page,
//! like 1; `page_size` 0 answers no records but still counts them; unknown query parameters
//! are ignored; a `return` parameter wins over a `Prefer` header.

use super::surface::Surface;
use crate::query::Page;
use crate::query::{Criteria, FieldKind, ListSource, PageQuery, Selection};
use crate::{Error, Result};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The names of the headers that carry a page's counts.
#[derive(Debug, Clone, Copy)]
pub struct CountHeaders {
    /// Records matching.
    pub total: &'static str,
    /// Records in this answer.
    pub elements: &'static str,
    /// A second spelling of `elements` sent with the same value, where the spec writes the
    /// header two ways (Surface C: its section says `X-Elements-Count`, its Limits section
    /// `x-element-count`; header names are case-insensitive, the spellings are not).
    pub elements_alias: Option<&'static str>,
    /// Pages of the current size.
    pub pages: &'static str,
}

/// Limits of one surface's paging parameters.
#[derive(Debug, Clone, Copy)]
pub struct PagingRules {
    /// Smallest page number accepted.
    pub min_number: i64,
    /// Smallest page size accepted.
    pub min_size: i64,
    /// Largest page size accepted.
    pub max_size: i64,
    /// Page size when none is given.
    pub default_size: i64,
}

/// One surface's paging convention: parameter names, limits, and where counts go.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    /// The page number parameter.
    pub number: &'static str,
    /// The page size parameter.
    pub size: &'static str,
    /// Limits and the default size.
    pub rules: PagingRules,
    /// The count headers (None: the surface answers counts in the body).
    pub headers: Option<CountHeaders>,
}

/// Surface B: `page_number` >= 0 (0 reads as 1), `page_size` 0..50 (default 50).
pub const BILLING_PAGING: Paging = Paging {
    number: "page_number",
    size: "page_size",
    rules: PagingRules {
        min_number: 0,
        min_size: 0,
        max_size: 50,
        default_size: 50,
    },
    headers: Some(BILLING_COUNT_HEADERS),
};

/// Surface B's count headers (named apart so its OpenAPI document needs no `Option`).
pub const BILLING_COUNT_HEADERS: CountHeaders = CountHeaders {
    total: "X-total-count",
    elements: "X-element-count",
    elements_alias: None,
    pages: "X-total-pages",
};

/// Surface C: `page_number` >= 1, `page_size` 1..50 (default 25).
pub const REVENUE_PAGING: Paging = Paging {
    number: "page_number",
    size: "page_size",
    rules: PagingRules {
        min_number: 1,
        min_size: 1,
        max_size: 50,
        default_size: 25,
    },
    headers: Some(REVENUE_COUNT_HEADERS),
};

/// Surface C's count headers (named apart so its OpenAPI document needs no `Option`).
pub const REVENUE_COUNT_HEADERS: CountHeaders = CountHeaders {
    total: "X-Total-Count",
    elements: "X-Elements-Count",
    elements_alias: Some("x-element-count"),
    pages: "X-Total-Pages",
};

/// Surface A: `pageNumber` >= 1, `pageSize` 1..500 (default 50); counts in the XML body.
pub const LEGACY_PAGING: Paging = Paging {
    number: "pageNumber",
    size: "pageSize",
    rules: PagingRules {
        min_number: 1,
        min_size: 1,
        max_size: 500,
        default_size: 50,
    },
    headers: None,
};

/// Reads the page of a request under `paging` (400 naming the parameter when out of
/// range); a page number below 1 reads as 1.
pub fn read_page(params: &HashMap<String, String>, paging: &Paging) -> Result<Page> {
    let rules = paging.rules;
    let number = int_param(
        params,
        paging.number,
        1,
        rules.min_number,
        i64::from(i32::MAX),
    )?
    .max(1);
    let size = int_param(
        params,
        paging.size,
        rules.default_size,
        rules.min_size,
        rules.max_size,
    )?;
    Ok(Page { number, size })
}

/// The value of named filter `name` (of `kind`) as `surface` reads it off its query
/// parameter, in that surface's words: text as given; an integer (Surface A, whose integer
/// keys are eids: "is not a 64-bit integer"; Surface C and the admin API: "is not an
/// integer"); `true` or `false` in any case; a date-time or a date (midnight in `tz`), in
/// stored form; an enumeration's value, which Surface A checks (its 400 lists the values)
/// and Surface C leaves to the domain (which finds nothing for another value). An internal
/// error for Surface B (its named filters are the query language's) and for a decimal
/// (no surface takes one as its own parameter).
pub fn filter_value(
    surface: Surface,
    name: &str,
    kind: FieldKind,
    raw: &str,
    tz: Tz,
) -> Result<SqlValue> {
    if surface == Surface::Billing {
        return Err(Error::Internal(format!(
            "{name}: Surface B reads named filters through its query language"
        )));
    }
    let quoted = || crate::error::quoted(raw);
    match kind {
        FieldKind::Text => Ok(SqlValue::Text(raw.to_string())),
        FieldKind::Integer => raw
            .trim()
            .parse::<i64>()
            .map(SqlValue::Integer)
            .map_err(|_| {
                let what = if surface == Surface::Legacy {
                    "a 64-bit integer"
                } else {
                    "an integer"
                };
                Error::bad_request(format!("{name}: {} is not {what}", quoted()))
            }),
        FieldKind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(SqlValue::Integer(1)),
            "false" => Ok(SqlValue::Integer(0)),
            _ => Err(Error::bad_request(format!(
                "{name}: {} is not true or false",
                quoted()
            ))),
        },
        FieldKind::DateTime => crate::domain::parse_time(name, raw, tz).map(SqlValue::Text),
        FieldKind::Enum(allowed) => {
            if surface == Surface::Legacy {
                crate::domain::check_enum(name, raw, allowed)?;
            }
            Ok(SqlValue::Text(raw.to_string()))
        }
        FieldKind::Decimal => Err(Error::Internal(format!(
            "{name}: no surface reads a decimal named filter as its own parameter"
        ))),
    }
}

/// An integer query parameter within `min..=max`, or `default` when absent; anything else
/// is a 400 naming the parameter.
pub fn int_param(
    params: &HashMap<String, String>,
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64> {
    match params.get(name) {
        None => Ok(default),
        Some(raw) => {
            let v: i64 = raw.trim().parse().map_err(|_| {
                Error::bad_request(format!(
                    "{name}: {} is not an integer",
                    crate::error::quoted(raw)
                ))
            })?;
            if v < min || v > max {
                return Err(Error::bad_request(format!(
                    "{name}: {v} is out of range {min}..{max}"
                )));
            }
            Ok(v)
        }
    }
}

/// Reads `omit_total_count` (TRUE or FALSE in any case, default FALSE; anything else is a
/// 400): whether the answer leaves out the total and page count (Surfaces B and C).
pub fn read_omit_total_count(params: &HashMap<String, String>) -> Result<bool> {
    match params.get("omit_total_count") {
        None => Ok(false),
        Some(v) if v.trim().eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.trim().eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(Error::bad_request(format!(
            "omit_total_count: {} is not TRUE or FALSE",
            crate::error::quoted(v)
        ))),
    }
}

/// Adds the count headers of `paging` to an answer of `elements` records (total and pages
/// only when counted).
pub fn add_count_headers(
    response: &mut Response,
    paging: &Paging,
    elements: usize,
    total: Option<i64>,
    page: Page,
) {
    let Some(names) = paging.headers else {
        return;
    };
    let h = response.headers_mut();
    h.insert(names.elements, HeaderValue::from(elements));
    if let Some(alias) = names.elements_alias {
        h.insert(alias, HeaderValue::from(elements));
    }
    if let Some(total) = total {
        h.insert(names.total, HeaderValue::from(total));
        h.insert(names.pages, HeaderValue::from(page.total_pages(total)));
    }
}

/// How much of each record to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Scalar fields; nested references reduced to `{id}`; nested collections left out.
    Simple,
    /// Everything (the default).
    Full,
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
                "return: {} is not one of SIMPLE, FULL",
                crate::error::quoted(params.get("return").map(String::as_str).unwrap_or_default())
            )))
        }
    };
    let shape = explicit.or(preferred).unwrap_or(Shape::Full);
    let applied = preferred.map(|_| preference_of(shape));
    Ok((shape, applied))
}

/// The `Preference-Applied` value naming `shape` (what a write answers even without Prefer).
pub fn preference_of(shape: Shape) -> &'static str {
    match shape {
        Shape::Simple => "return=minimal",
        Shape::Full => "return=representation",
    }
}

/// A Surface B list request read off HTTP: the engine's query and how to answer.
#[derive(Debug, Clone)]
pub struct Listing {
    /// What to fetch (`omit_total_count=TRUE` turns counting off).
    pub query: PageQuery,
    /// The representation asked for.
    pub shape: Shape,
    /// The `Preference-Applied` value to answer, when a Prefer return preference was sent.
    pub preference_applied: Option<&'static str>,
}

impl Listing {
    /// Reads a Surface B list request for `source`: named filters, `filter`, `sort`, the
    /// page, `return`/`Prefer` and `omit_total_count`, each checked in that order (a 400
    /// names the first parameter that is wrong). Date-times are read in `tz`; `defaults`
    /// as in [`Selection::compile`].
    pub fn read(
        params: &HashMap<String, String>,
        headers: &HeaderMap,
        source: &ListSource,
        tz: Tz,
        defaults: &[(&str, &str)],
    ) -> Result<Listing> {
        let criteria = Criteria {
            filter: params.get("filter").cloned(),
            sort: params.get("sort").cloned(),
            named: source
                .filter_names()
                .filter_map(|n| params.get(n).map(|v| (n.to_string(), v.clone())))
                .collect(),
        };
        let selection = Selection::compile(&criteria, source, tz, defaults)?;
        let page = read_page(params, &BILLING_PAGING)?;
        let (shape, preference_applied) = read_shape(params, headers)?;
        let omit_total_count = read_omit_total_count(params)?;
        Ok(Listing {
            query: PageQuery {
                selection,
                page,
                count_total: !omit_total_count,
            },
            shape,
            preference_applied,
        })
    }

    /// Narrows the list to a fixed scope (see [`Selection::scope`]).
    pub fn scope(mut self, sql: &str, params: Vec<rusqlite::types::Value>) -> Listing {
        self.query = self.query.scope(sql, params);
        self
    }

    /// The answer: the records (already shaped) as a JSON array with ETag, Surface B's
    /// count headers and Preference-Applied.
    pub fn respond(
        &self,
        records: Vec<Box<RawValue>>,
        total: Option<i64>,
        headers: &HeaderMap,
    ) -> Response {
        self.answer(records, total).respond(headers)
    }

    /// [`Listing::respond`] before If-None-Match is looked at: what a memo keeps.
    pub fn answer(&self, records: Vec<Box<RawValue>>, total: Option<i64>) -> Answer {
        let count = records.len();
        let bytes = serde_json::to_vec(&records).unwrap_or_default();
        let mut answer = Answer::json(
            StatusCode::OK,
            bytes,
            &format!("{total:?}"),
            self.preference_applied,
        );
        if let Some(names) = BILLING_PAGING.headers {
            answer
                .headers
                .push((names.elements, HeaderValue::from(count)));
            if let Some(total) = total {
                answer.headers.push((names.total, HeaderValue::from(total)));
                answer.headers.push((
                    names.pages,
                    HeaderValue::from(self.query.page.total_pages(total)),
                ));
            }
        }
        answer
    }
}

/// A JSON answer with its ETag and other headers, ready to send to any request that asks
/// for it: [`Answer::respond`] turns it into a 304 when the request's If-None-Match matches.
/// Reads keep it per tenant and database version (`TenantDb::read_memo`), so the same read
/// at the same version costs neither a query, nor JSON rendering, nor hashing.
#[derive(Debug, Clone)]
pub struct Answer {
    status: StatusCode,
    body: axum::body::Bytes,
    etag: String,
    headers: Vec<(&'static str, HeaderValue)>,
}

impl Answer {
    /// A JSON body with a strong ETag over it and `extra` (what the answer's other headers
    /// say, e.g. the total, so that it changes the tag), and Preference-Applied when given.
    pub fn json(
        status: StatusCode,
        bytes: Vec<u8>,
        extra: &str,
        applied: Option<&'static str>,
    ) -> Answer {
        let etag = etag_of(&bytes, extra);
        let headers = applied
            .map(|a| ("Preference-Applied", HeaderValue::from_static(a)))
            .into_iter()
            .collect();
        Answer {
            status,
            body: bytes.into(),
            etag,
            headers,
        }
    }

    /// The response to a request with `headers`: 304 without a body when the status is 200
    /// and If-None-Match matches the ETag (pass empty `headers` for writes).
    pub fn respond(&self, headers: &HeaderMap) -> Response {
        let mut response = if self.status == StatusCode::OK && none_match(headers, &self.etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            (
                self.status,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                self.body.clone(),
            )
                .into_response()
        };
        let h = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&self.etag) {
            h.insert(header::ETAG, v);
        }
        for (name, value) in &self.headers {
            h.insert(*name, value.clone());
        }
        response
    }
}

/// The answer to a single read or a write: one record with ETag (304 when a read's
/// If-None-Match matches; pass empty `headers` for writes) and Preference-Applied.
pub fn record_response(
    status: StatusCode,
    record: &RawValue,
    applied: Option<&'static str>,
    headers: &HeaderMap,
) -> Response {
    record_answer(status, record, applied).respond(headers)
}

/// [`record_response`] before If-None-Match is looked at: what a memo keeps.
pub fn record_answer(
    status: StatusCode,
    record: &RawValue,
    applied: Option<&'static str>,
) -> Answer {
    Answer::json(status, record.get().as_bytes().to_vec(), "", applied)
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

#[cfg(test)]
mod tests;
