//! `GET /billing/2/openapi.json`: Surface B's OpenAPI 3.1 document (usage events included),
//! served without credentials, built from the route table (`crate::routes`: one operation per
//! row, see `operations`) and the Rust types of their bodies (`ToSchema` derives on the
//! request bodies, `crate::resources`, on the lists' records, `shared::domain::lists`, and
//! on `shared::domain::usage`; see `shared::web::openapi`) and committed as docs/openapi/billing.json (the e2e test `openapi`
//! checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it).

mod operations;
mod usage;

pub use usage::{simulation, usage_example};

use crate::routes::{table, Doc};
use operations::{operation, simple_shape};
use serde_json::{json, Value};
use shared::domain::lists::bill_batches::{Invoice, Run};
use shared::web::openapi::{schema_value, with_idempotency, Builder, Served};
use shared::web::{ApiError, BILLING_PREFIX};

/// The document, built on first use: served without credentials at `.../openapi.json`,
/// committed as docs/openapi/*.json.
pub static DOCUMENT: Served = Served::new(document);

/// The document: one operation per row of the route table.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    b.named("CpqDiscount", cpq_discount());
    // Named by the members that hold either a reference or the whole record (`Entry`).
    b.schema::<Run>();
    b.schema::<Invoice>();
    // Named by the rated event's schema (which describes the event it was rated from).
    b.named(
        "UsageEvent",
        schema_value(shared::domain::usage::usage_event()),
    );
    // The records a read answers, which the SIMPLE shape reduces (lists, reads and writes
    // answer the same records).
    let mut records = Vec::new();
    for route in table() {
        let op = operation(&mut b, &route, e);
        if let Doc::List { listed, .. } | Doc::Read { listed, .. } = route.doc {
            let item = (listed.item)(&mut b);
            if let Some(name) = item["$ref"].as_str() {
                let name = name.trim_start_matches("#/components/schemas/").to_string();
                if !records.contains(&name) {
                    records.push(name);
                }
            }
        }
        let path = format!("{BILLING_PREFIX}{}", route.path);
        b.operation(&path, route.verb.key(), op);
    }
    simple_shape(&mut b, &records);
    let mut doc = b.finish(
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Billing sandbox: Surface B (billing API v2)",
                "version": "2",
                "description": "Usage events, queries and maintenance. Behaviour: docs/billing.md and docs/usage.md. Identifiers are strings; amounts are JSON numbers with their exact digits; date-times carry the tenant's UTC offset.",
            },
            "servers": [{ "url": "/" }],
            "security": [{ "ApiKey": [] }, { "Bearer": [] }],
        }),
        json!({
            "ApiKey": { "type": "apiKey", "in": "header", "name": "X-Api-Key" },
            "Bearer": { "type": "http", "scheme": "bearer", "bearerFormat": "JWT" },
        }),
    );
    with_idempotency(&mut doc, e);
    doc
}

/// A CPQ discount of a billing account reference (the sandbox keeps none: no type renders one).
fn cpq_discount() -> Value {
    let nullable = |t: &str| json!({ "type": [t, "null"] });
    let dt = json!({ "type": ["string", "null"], "format": "date-time" });
    let mut decimal = schema_value(shared::json_schema::decimal_or_null());
    decimal["type"] = json!(["number", "null"]);
    json!({
        "type": "object",
        "properties": {
            "start_date": dt.clone(),
            "deactivation_date": dt,
            "duration": { "type": ["integer", "null"], "format": "int32" },
            "recurrence": nullable("string"),
            "value": decimal,
            "application_type": nullable("string"),
            "price_type": nullable("string"),
            "discount_key": nullable("string"),
        },
    })
}
