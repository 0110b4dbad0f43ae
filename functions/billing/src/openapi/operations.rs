//! The operations of Surface B's rows (`crate::routes`): error descriptions, the paging,
//! shape and ETag parameters and headers (`web::listing`), list, read, write and delete
//! operations (a list's filters read off its list source), and the SIMPLE shape's effect on
//! the records' schemas.

use crate::routes::{Doc, Listed, Route};
use serde_json::{json, Value};
use shared::query::FieldKind;
use shared::web::listing::{BILLING_COUNT_HEADERS, BILLING_PAGING};
use shared::web::openapi::{
    array, document_operation, json_content, omit_total_count, param, string, Builder, Op,
};
use shared::web::routes::path_params;

fn describe(status: u16) -> &'static str {
    match status {
        400 => "Bad request: malformed parameter, filter, sort or body (the message names it)",
        401 => "Missing or invalid credentials",
        404 => "Not found",
        413 => "Request body too large",
        415 => "Content-Type is not application/json",
        503 => "Storage unavailable; nothing was applied",
        _ => "error",
    }
}

/// What every operation of Surface B shares: its tag and the `default` answer.
fn op(tag: &str, id: &str, summary: &str, e: &Value) -> Op {
    let unknown = json!({ "description": "Unknown error", "content": json_content(e.clone()) });
    Op::new(tag, id, summary, describe).response("default", unknown)
}

fn not_modified() -> Value {
    json!({ "description": "Not modified (If-None-Match matched)" })
}

fn header(text: &str, schema: Value) -> Value {
    json!({ "description": text, "schema": schema })
}

/// The headers of a page (`BILLING_COUNT_HEADERS`), with ETag and Preference-Applied.
fn list_headers() -> Value {
    let names = BILLING_COUNT_HEADERS;
    let int64 = json!({ "type": "integer", "format": "int64" });
    let mut headers = one_headers();
    headers[names.total] = header(
        "Records matching (left out with omit_total_count=TRUE)",
        int64.clone(),
    );
    headers[names.elements] = header("Records in this answer", int64.clone());
    headers[names.pages] = header("Pages (left out with omit_total_count=TRUE)", int64);
    headers
}

fn one_headers() -> Value {
    json!({
        "ETag": header("Hash of the body and total", string()),
        "Preference-Applied": header("return=minimal|representation, when a Prefer: return=... was sent", string()),
    })
}

fn prefer() -> Value {
    param(
        "Prefer",
        "header",
        json!({ "type": "string", "enum": ["return=minimal", "return=representation"] }),
        Some("return=minimal equals return=SIMPLE, return=representation equals FULL"),
    )
}

fn shape_params() -> [Value; 2] {
    let ret = param(
        "return",
        "query",
        json!({ "type": "string", "enum": ["SIMPLE", "FULL"] }),
        Some("SIMPLE: scalar fields, references as {id}, nested collections left out. Default FULL; wins over Prefer."),
    );
    [ret, prefer()]
}

fn if_none_match() -> Value {
    param(
        "If-None-Match",
        "header",
        string(),
        Some("An ETag of an earlier answer (or *): 304 when unchanged"),
    )
}

/// Filters, sort, paging (`BILLING_PAGING`) and the shape of a list.
fn list_params() -> Vec<Value> {
    let rules = BILLING_PAGING.rules;
    let q = |name: &str, schema: Value, text: &str| param(name, "query", schema, Some(text));
    let mut params = vec![
        q("filter", json!({ "type": "string", "maxLength": shared::query::MAX_FILTER_CHARS }), "Query-language expression, e.g. status EQ 'ACTIVE' AND name LIKE 'A%'"),
        q("sort", string(), "Comma-separated sortable fields; a leading - sorts descending; at most 8 keys, each field once"),
        q(BILLING_PAGING.number, json!({ "type": "integer", "format": "int32", "minimum": rules.min_number }), "Page, >= 0 (0 and 1 are the first page); default 1"),
        q(BILLING_PAGING.size, json!({ "type": "integer", "format": "int32", "minimum": rules.min_size, "maximum": rules.max_size }), &format!("{}..{}, default {}; 0 answers [] with the totals", rules.min_size, rules.max_size, rules.default_size)),
        q("omit_total_count", omit_total_count(), "TRUE leaves out X-total-count and X-total-pages"),
        q("id", string(), "Internal identifier"),
        if_none_match(),
    ];
    params.extend(shape_params());
    params
}

/// A path id, naming a demo-seed record as example.
fn pid(name: &str) -> Value {
    let mut p = param(name, "path", string(), None);
    p["example"] = json!("1");
    p
}

pub(super) fn enumeration(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// The error answers of a row: 400 and 401 always, 404 when the path names a record, 413
/// and 415 when it takes a body, 503 always.
fn errors(path: &str, body: bool) -> Vec<u16> {
    let mut errors = vec![400, 401];
    if !path_params(path).is_empty() {
        errors.push(404);
    }
    if body {
        errors.extend([413, 415]);
    }
    errors.push(503);
    errors
}

/// The query parameter of the named filter `name` of a list: its schema from the field's
/// kind in the list source (identifiers are strings on Surface B), its bound and its
/// default as the resource declares them.
fn filter(listed: &Listed, name: &str) -> Value {
    let kind = listed
        .source
        .fields
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.kind);
    let mut schema = match kind {
        Some(FieldKind::Enum(values)) => enumeration(values),
        Some(FieldKind::DateTime) => json!({ "type": "string", "format": "date-time" }),
        Some(FieldKind::Decimal) => json!({ "type": "string", "description": "Exact decimal" }),
        _ => string(),
    };
    if let Some((_, limit)) = listed.max_chars.iter().find(|(n, _)| *n == name) {
        schema["maxLength"] = json!(limit);
    }
    let default = listed
        .defaults
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, value)| format!("Default {value}"));
    param(name, "query", schema, default.as_deref())
}

/// `expand`, when the resource takes it: its names listed.
fn expand(listed: &Listed) -> Option<Value> {
    let (last, rest) = listed.expand.split_last()?;
    let names = if rest.is_empty() {
        (*last).to_string()
    } else {
        format!("{} or {last}", rest.join(", "))
    };
    Some(param("expand", "query", string(), Some(&names)))
}

/// The operation of a row (the document's own operations have their own shape).
pub(super) fn operation(b: &mut Builder, route: &Route, e: &Value) -> Value {
    let tag = route.group.tag();
    let path_ids = || path_params(route.path).into_iter().map(pid);
    match route.doc {
        Doc::Document(rendering) => document_operation(tag, rendering),
        Doc::List {
            id,
            summary,
            listed,
        } => {
            let item = (listed.item)(b);
            // A filter the path sets (the parent's id of a nested list) is not a query
            // parameter: the path already narrows the list to it.
            let set_by_path = path_params(route.path);
            let params: Vec<Value> = path_ids()
                .chain(
                    listed
                        .source
                        .named_filters
                        .iter()
                        .filter(|name| !set_by_path.contains(name))
                        .map(|name| filter(&listed, name)),
                )
                .chain(expand(&listed))
                .chain(list_params())
                .collect();
            op(tag, id, summary, e)
                .params(&params)
                .answer_described(200, "One page of records", Some(array(item)))
                .headers(200, list_headers())
                .response("304", not_modified())
                .errors(&errors(route.path, false), e)
                .build()
        }
        Doc::Read {
            id,
            summary,
            listed,
        } => {
            let item = (listed.item)(b);
            let params: Vec<Value> = path_ids()
                .chain(expand(&listed))
                .chain(shape_params())
                .chain([if_none_match()])
                .collect();
            op(tag, id, summary, e)
                .params(&params)
                .answer_described(200, "The record", Some(item))
                .headers(200, one_headers())
                .response("304", not_modified())
                .errors(&errors(route.path, false), e)
                .build()
        }
        Doc::Write { id, summary, write } => {
            let mut op = op(tag, id, summary, e).body((write.body)(b), true);
            if let Some(example) = write.example {
                op = op.example(example());
            }
            let answer = (write.answer)(b);
            let params: Vec<Value> = path_ids().chain(write.prefer.then(prefer)).collect();
            let applied = header(
                "Always: return=minimal|representation, the form answered (return=representation unless SIMPLE was asked for)",
                string(),
            );
            op.params(&params)
                .answer(write.status, Some(answer))
                .headers(write.status, json!({ "Preference-Applied": applied }))
                .errors(&errors(route.path, true), e)
                .build()
        }
        Doc::Delete { id, summary } => {
            let params: Vec<Value> = path_ids().collect();
            op(tag, id, summary, e)
                .params(&params)
                .answer_described(204, "Deleted; empty body", None)
                .errors(&errors(route.path, false), e)
                .build()
        }
    }
}

/// The SIMPLE shape (`return=SIMPLE`, `Prefer: return=minimal`; `web::listing::simplify`)
/// leaves out a record's arrays and reduces its nested objects to `{id}`. So in the schemas of
/// the `records` a read answers, an array member is not required, and a schema a member
/// refers to requires only `id`.
#[allow(
    clippy::expect_used,
    reason = "static document: `records` are registered by `Builder::schema`, which registers every schema they refer to; the openapi tests build it"
)]
pub(super) fn simple_shape(b: &mut Builder, records: &[String]) {
    let mut nested = Vec::new();
    for name in records {
        let schema = b.get_mut(name).expect("a record schema");
        let properties = schema["properties"].clone();
        let is_array = |p: &Value| match &p["type"] {
            Value::String(t) => t == "array",
            Value::Array(types) => types.iter().any(|t| t == "array"),
            _ => false,
        };
        if let Some(required) = schema["required"].as_array_mut() {
            required.retain(|r| {
                !properties
                    .get(r.as_str().unwrap_or(""))
                    .is_some_and(is_array)
            });
        }
        let mut refs = Vec::new();
        for p in properties.as_object().into_iter().flat_map(|m| m.values()) {
            if !is_array(p) {
                references_of(p, &mut refs);
            }
        }
        nested.extend(refs);
    }
    for name in nested {
        let schema = b.get_mut(&name).expect("a nested schema");
        let has_id = schema["properties"].get("id").is_some();
        schema["required"] = if has_id { json!(["id"]) } else { json!([]) };
    }
}

/// The schema names `v` refers to directly (a `$ref`, or one in a `oneOf`).
fn references_of(v: &Value, out: &mut Vec<String>) {
    if let Some(r) = v["$ref"].as_str() {
        out.push(r.trim_start_matches("#/components/schemas/").to_string());
    }
    for alternative in v["oneOf"].as_array().into_iter().flatten() {
        references_of(alternative, out);
    }
}
