//! The admin API's OpenAPI 3.1 document, built from its route table (`crate::routes`: one
//! operation per row, below) and the Rust types of their bodies (`ToSchema`, see
//! `shared::web::openapi`), served at `GET /sandbox/v1/openapi.json` and committed as
//! docs/openapi/admin.json (the e2e test `openapi` checks the file equals the text built
//! here; `OPENAPI_WRITE=1` rewrites it). Paths are absolute (the one server is `/`).
//!
//! Invariant: Idempotency-Key is documented on the rows marked `keyed` and nowhere else.

use crate::powers::JOURNAL_PAGING;
use crate::routes::{table, Doc, Query, Route};
use serde_json::{json, Value};
use shared::web::openapi::{
    array, document_operation, json_content, param, schema_value, string, with_idempotency_on,
    Builder, Op, Served,
};
use shared::web::routes::path_params;
use shared::web::{ApiError, ADMIN_PREFIX};
use std::collections::BTreeSet;

/// The document, built on first use: served without credentials at `.../openapi.json`,
/// committed as docs/openapi/*.json.
pub static DOCUMENT: Served = Served::new(document);

fn describe(status: u16) -> &'static str {
    match status {
        400 => "Bad request (malformed JSON, unknown field, bad seed or time zone)",
        401 => "Missing or invalid X-Admin-Key",
        404 => "No such tenant (or checkpoint)",
        409 => "Conflict (e.g. a tenant or checkpoint name in use; no clock advance left to undo)",
        413 => "Request body too large",
        415 => "Content-Type is not application/json",
        422 => "The tenant is too large to export (a kind over 10,000 records, or more records in all than SANDBOX_MAX_FIXTURE_RECORDS: EXPORT_TOO_LARGE)",
        503 => "Storage unavailable",
        _ => "error",
    }
}

/// A path parameter by its name: a tenant's id, a fault rule's id, a checkpoint's name (its
/// schema the rule `shared::store::checkpoints` checks).
fn path_param(name: &str) -> Value {
    let schema = match name {
        "name" => schema_value(crate::checkpoint_name()),
        _ => string(),
    };
    param(name, "path", schema, None)
}

fn query_param(q: &Query) -> Value {
    param(q.name, "query", (q.schema)(), q.description)
}

/// `page_number` and `page_size` of the admin lists, as [`JOURNAL_PAGING`] reads them.
fn paging() -> [Value; 2] {
    let rules = JOURNAL_PAGING.rules;
    [
        param(
            JOURNAL_PAGING.number,
            "query",
            json!({ "type": "integer", "minimum": rules.min_number }),
            None,
        ),
        param(
            JOURNAL_PAGING.size,
            "query",
            json!({ "type": "integer", "minimum": rules.min_size, "maximum": rules.max_size }),
            None,
        ),
    ]
}

/// The count headers of the admin lists ([`JOURNAL_PAGING`]'s).
fn counts() -> Value {
    let count =
        |what: &str| json!({ "description": what, "schema": { "type": "integer", "minimum": 0 } });
    let mut headers = json!({});
    if let Some(names) = JOURNAL_PAGING.headers {
        headers[names.total] = count("Entries matching");
        headers[names.elements] = count("Entries in this answer");
        headers[names.pages] = count("Pages of the current size");
    }
    headers
}

/// The operation of a row.
fn operation(b: &mut Builder, route: &Route, e: &Value) -> Value {
    let o = match route.doc {
        Doc::Document(rendering) => return document_operation("admin", rendering),
        Doc::Meta {
            id,
            summary,
            answer,
        } => {
            let any = json!({ "type": "object", "additionalProperties": true });
            return json!({
                "operationId": id,
                "summary": summary,
                "security": [],
                "tags": ["meta"],
                "responses": { "200": { "description": answer, "content": json_content(any) } },
            });
        }
        Doc::Op(o) => o,
    };
    let mut params: Vec<Value> = path_params(route.path)
        .into_iter()
        .map(path_param)
        .chain(o.query.iter().map(query_param))
        .collect();
    if o.paged {
        params.extend(paging());
    }
    let mut built = Op::new("admin", o.id, o.summary, describe).params(&params);
    let answer = o.answer.map(|schema| schema(b));
    built = match (o.paged, answer) {
        (true, Some(item)) => built
            .answer(o.status, Some(array(item)))
            .headers(o.status, counts()),
        (_, answer) => built.answer(o.status, answer),
    };
    if let Some(rehearsal) = o.rehearsal {
        let schema = rehearsal(b);
        built = built.answer_described(200, "Dry run: what would be created", Some(schema));
    }
    if let Some(body) = o.body {
        built = built.body((body.schema)(b), body.required);
    }
    built.errors(o.errors, e).build()
}

/// The document: one operation per row of the route table.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    let rows = table();
    let mut keyed = BTreeSet::new();
    for route in &rows {
        let path = format!("{ADMIN_PREFIX}{}", route.path);
        let op = operation(&mut b, route, e);
        if matches!(route.doc, Doc::Op(o) if o.keyed) {
            keyed.insert((path.clone(), route.verb.key().to_string()));
        }
        b.operation(&path, route.verb.key(), op);
    }
    let mut doc = b.finish(
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Billing sandbox: admin API",
                "version": "1",
                "description": "Tenants, their credentials and tokens, and each tenant's test clock, fault rules and request journal. Guarded by X-Admin-Key.",
            },
            "servers": [{ "url": "/" }],
            "security": [{ "AdminKey": [] }],
        }),
        json!({ "AdminKey": { "type": "apiKey", "in": "header", "name": "X-Admin-Key" } }),
    );
    with_idempotency_on(&mut doc, e, KEY_TEXT, |path, method| {
        keyed.contains(&(path.to_string(), method.to_string()))
    });
    doc
}

/// What Idempotency-Key promises on the admin writes that keep it (docs/storage.md,
/// "Idempotency keys": the tenant's database or the registry holds the key with the write).
const KEY_TEXT: &str = "Optional: makes a retry of this write safe. The same key with the same request (method, path, query, body) replays the first answer (with Idempotent-Replayed: true) instead of running again: a retried tenant creation gets the same tenant and credentials. Kept 24 hours (a tenant's writes by its clock, creations and deletions by the server's clock), at most 10,000 keys; 409 while the first is in flight or when it was applied without a recorded answer; 422 with a different request.";
