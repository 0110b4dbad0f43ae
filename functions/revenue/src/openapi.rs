//! Surface C's OpenAPI 3.1 document, built from its route table (`crate::routes`: one
//! operation per row, below) and the domain types of their bodies (`ToSchema`, see `shared::web::openapi`), served at `<prefix>/openapi.json`
//! under both base paths and committed as docs/openapi/revenue.json (the e2e test `openapi`
//! checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it). Paths are relative to the
//! two `servers` entries, `/revenue/3` (the docs' one, first) and the platform's `/calypso/3`.

use crate::query::{Kind, Param};
use crate::routes::{table, Doc, Route};
use serde_json::{json, Value};
use shared::web::listing::{REVENUE_COUNT_HEADERS, REVENUE_PAGING};
use shared::web::openapi::{
    array, document_operation, omit_total_count, param, string, with_idempotency, Builder, Op,
    Served,
};
use shared::web::routes::path_params;
use shared::web::ApiError;

/// The document, built on first use: served without credentials at `.../openapi.json`,
/// committed as docs/openapi/*.json.
pub static DOCUMENT: Served = Served::new(document);

fn describe(status: u16) -> &'static str {
    match status {
        400 => {
            "Bad request (malformed JSON, wrong types, out of range, bad dates, non-int64 path id)"
        }
        401 => "Authentication failed.",
        404 => "Entity not found",
        409 => "Conflict with existing state",
        412 => "Precondition failed",
        413 => "Request body too large",
        415 => "Content-Type is not application/json",
        503 => "Service unavailable; nothing was applied",
        _ => "error",
    }
}

fn op(id: &str, summary: &str) -> Op {
    Op::new("revenue", id, summary, describe)
}

fn int64() -> Value {
    json!({ "type": "integer", "format": "int64" })
}

/// A path id, with the demo record it names as example.
fn cid(name: &str) -> Value {
    let mut p = param(name, "path", int64(), None);
    p["example"] = json!(match name {
        "yid" => 4,
        "pid" => 5,
        _ => 1,
    });
    p
}

fn query(name: &str, schema: Value, description: Option<&str>) -> Value {
    param(name, "query", schema, description)
}

/// The paging parameters (`REVENUE_PAGING`).
fn page_params() -> [Value; 3] {
    let rules = REVENUE_PAGING.rules;
    [
        query(
            REVENUE_PAGING.number,
            json!({ "type": "integer", "format": "int64", "minimum": rules.min_number }),
            Some("Default 1"),
        ),
        query(
            REVENUE_PAGING.size,
            json!({ "type": "integer", "format": "int64", "minimum": rules.min_size, "maximum": rules.max_size }),
            Some(&format!("Default {}", rules.default_size)),
        ),
        query(
            "omit_total_count",
            omit_total_count(),
            Some("TRUE leaves out X-Total-Count and X-Total-Pages"),
        ),
    ]
}

/// The count headers of a page (`REVENUE_COUNT_HEADERS`).
fn count_headers() -> Value {
    let names = REVENUE_COUNT_HEADERS;
    let header = |text: &str| json!({ "description": text, "schema": int64() });
    let mut headers = json!({
        names.total: header("Records matching (left out with omit_total_count=TRUE)"),
        names.elements: header("Records in this answer"),
        names.pages: header("Pages (left out with omit_total_count=TRUE)"),
    });
    if let Some(alias) = names.elements_alias {
        headers[alias] = header(&format!(
            "Records in this answer: {} as the spec's Limits section spells it",
            names.elements
        ));
    }
    headers
}

/// A paged list: its parameters then the paging ones, one page of `item`s with the counts.
fn paged(op: Op, params: &[Value], items: Value, e: &Value, errors: &[u16]) -> Value {
    op.params(params.iter().chain(page_params().iter()))
        .answer(200, Some(array(items)))
        .headers(200, count_headers())
        .errors(errors, e)
        .build()
}

/// The query parameters of a row, as their list declares them (`crate::query`).
fn query_param(param: &Param) -> Value {
    let enumeration = |values: &[&str]| json!({ "type": "string", "enum": values });
    let schema = match param.kind {
        Kind::Text | Kind::Time => string(),
        Kind::Int => int64(),
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::Enum(values) => enumeration(values),
        Kind::Bounded { min, max, .. } => {
            let mut schema = json!({ "type": "integer", "format": "int64", "minimum": min });
            if let Some(max) = max {
                schema["maximum"] = json!(max);
            }
            schema
        }
    };
    query(param.name, schema, param.description)
}

/// The operation of a row (the document's own operations have their own shape).
fn operation(b: &mut Builder, route: &Route, e: &Value) -> Value {
    let o = match route.doc {
        Doc::Document(rendering) => return document_operation("revenue", rendering),
        Doc::Op(o) => o,
    };
    let params: Vec<Value> = path_params(route.path)
        .into_iter()
        .map(cid)
        .chain(o.query.params().iter().map(query_param))
        .collect();
    let mut built = op(o.id, o.summary);
    if let Some(body) = o.body {
        built = built.body((body.schema)(b), true);
        if let Some(example) = body.example {
            built = built.example(example());
        }
    }
    let answer = o.answer.map(|schema| schema(b));
    if o.paged {
        let items = answer.unwrap_or_else(|| json!({}));
        return paged(built, &params, items, e, o.errors);
    }
    built = built.params(&params);
    built = match answer {
        Some(schema) => built.answer(o.status, Some(schema)),
        None => built.answer_described(o.status, "Deleted; empty body", None),
    };
    built.errors(o.errors, e).build()
}

/// The document: one operation per row of the route table.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    for route in table() {
        let op = operation(&mut b, &route, e);
        b.operation(route.path, route.verb.key(), op);
    }
    let mut doc = b.finish(
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Billing sandbox: Surface C (revenue management)",
                "version": "3.16.0.5",
                "description": "AR ledgers, calendars, ledger and collector runs, charge info, replication. Behaviour: docs/revenue.md. Identifiers are int64 numbers.",
            },
            "servers": [
                { "url": "/revenue/3", "description": "The sandbox's base path (the docs use it)" },
                { "url": "/calypso/3", "description": "The production platform's base path: the same operations" },
            ],
            "security": [{ "ApiKey": [] }],
        }),
        json!({ "ApiKey": { "type": "apiKey", "in": "header", "name": "X-Api-Key" } }),
    );
    with_idempotency(&mut doc, e);
    doc
}
