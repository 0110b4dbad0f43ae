//! `GET /billing/2/openapi.json`: Surface B's OpenAPI 3.1 document (usage events included),
//! served without credentials, built from its operations (below) and the Rust types of their
//! bodies (`ToSchema` derives on the resources and on `shared::domain::usage`; see
//! `shared::web::openapi`) and committed as docs/openapi/billing.json (the e2e test `openapi`
//! checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it).

use crate::resources::actions::Action;
use crate::resources::adjustment_applications::AdjustmentApplication;
use crate::resources::adjustment_categories::AdjustmentCategory;
use crate::resources::agreement_services::{AgreementService, Patch};
use crate::resources::agreements::Agreement;
use crate::resources::bill_batches::{BillBatch, CreateBody, Invoice, Run};
use crate::resources::true_ups::{NewRelation, Relation};
use crate::resources::AccountRef;
use serde_json::{json, Value};
use shared::domain::usage::{BulkOutcome, BulkRequest, ErredEvent, RatedEvent};
use shared::web::listing::BILLING_PAGING;
use shared::web::openapi::{
    array, document_operation, json_content, omit_total_count, param, string, with_idempotency,
    Builder, Op,
};
use shared::web::{ApiError, BILLING_PREFIX};
use std::sync::LazyLock;

/// The document as served and committed.
pub fn text() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| shared::web::openapi::render(&document()));
    &TEXT
}

/// `GET /billing/2/openapi.json`, without credentials.
pub async fn serve() -> axum::response::Response {
    shared::web::openapi::serve(text())
}

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

/// The headers of a page (`BILLING_PAGING`), with ETag and Preference-Applied.
fn list_headers() -> Value {
    let names = BILLING_PAGING.headers.expect("Surface B counts in headers");
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

fn filter(name: &str, schema: Value) -> Value {
    param(name, "query", schema, None)
}

fn enumeration(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// A list operation.
struct List<'a> {
    tag: &'a str,
    path_params: Vec<Value>,
    filters: Vec<Value>,
    extra_errors: &'a [u16],
}

impl Default for List<'_> {
    fn default() -> Self {
        List {
            tag: "billing",
            path_params: vec![],
            filters: vec![],
            extra_errors: &[],
        }
    }
}

impl List<'_> {
    fn build(self, id: &str, summary: &str, item: Value, e: &Value) -> Value {
        let mut errors = vec![400, 401];
        errors.extend(self.extra_errors);
        errors.push(503);
        let params: Vec<Value> = self
            .path_params
            .into_iter()
            .chain(self.filters)
            .chain(list_params())
            .collect();
        op(self.tag, id, summary, e)
            .params(&params)
            .answer_described(200, "One page of records", Some(array(item)))
            .headers(200, list_headers())
            .response("304", not_modified())
            .errors(&errors, e)
            .build()
    }
}

/// A read of one record.
fn one(tag: &str, id: &str, summary: &str, item: Value, params: &[Value], e: &Value) -> Value {
    let params: Vec<Value> = params
        .iter()
        .cloned()
        .chain(shape_params())
        .chain([if_none_match()])
        .collect();
    op(tag, id, summary, e)
        .params(&params)
        .answer_described(200, "The record", Some(item))
        .headers(200, one_headers())
        .response("304", not_modified())
        .errors(&[400, 401, 404, 503], e)
        .build()
}

/// A write answering `status` with `item`; `prefer`: it takes Prefer.
fn write(op: Op, status: u16, item: Value, params: &[Value], prefer_: bool) -> Op {
    let mut params = params.to_vec();
    if prefer_ {
        params.push(prefer());
    }
    let applied = header(
        "Always: return=minimal|representation, the form answered (return=representation unless SIMPLE was asked for)",
        string(),
    );
    op.params(&params)
        .answer(status, Some(item))
        .headers(status, json!({ "Preference-Applied": applied }))
}

/// The document.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    let dt = json!({ "type": "string", "format": "date-time" });
    let currency = enumeration(shared::money::CURRENCY_CODES);
    b.named("CpqDiscount", cpq_discount());
    // Named by the members that hold either a reference or the whole record (`Entry`).
    b.schema::<Run>();
    b.schema::<Invoice>();
    b.operation(&p("/openapi.json"), "get", document_operation("billing"));

    // Actions.
    let action = b.schema::<Action>();
    let filters = vec![
        filter("product_id", string()),
        filter(
            "action_type",
            enumeration(shared::domain::actions::ACTION_TYPES),
        ),
        filter("agreement_id", string()),
        filter("bill_cycle_id", string()),
    ];
    let list = List {
        filters,
        ..Default::default()
    };
    b.operation(
        &p("/actions"),
        "get",
        list.build("listActions", "Actions", action.clone(), e),
    );
    b.operation(
        &p("/actions/{id}"),
        "get",
        one(
            "billing",
            "getAction",
            "One action",
            action.clone(),
            &[pid("id")],
            e,
        ),
    );
    let list = List {
        path_params: vec![pid("bill_cycle_id")],
        extra_errors: &[404],
        ..Default::default()
    };
    let built = list.build(
        "listBillCycleActions",
        "Actions of a bill cycle",
        action.clone(),
        e,
    );
    b.operation(&p("/bill-cycles/{bill_cycle_id}/actions"), "get", built);
    let built = one(
        "billing",
        "getBillCycleAction",
        "One action of a bill cycle",
        action,
        &[pid("bill_cycle_id"), pid("id")],
        e,
    );
    b.operation(
        &p("/bill-cycles/{bill_cycle_id}/actions/{id}"),
        "get",
        built,
    );

    // Adjustments.
    let application = b.schema::<AdjustmentApplication>();
    let filters = vec![
        filter("adjustment_id", string()),
        filter("billing_account_id", string()),
        filter("account_num", string()),
        filter("occurred_on", dt.clone()),
        filter(
            "unapplied_amount",
            json!({ "type": "string", "description": "Exact decimal" }),
        ),
        filter(
            "adjustment_application_type",
            enumeration(shared::domain::adjustments::ADJUSTMENT_APPLICATION_TYPES),
        ),
    ];
    let list = List {
        filters,
        ..Default::default()
    };
    let built = list.build(
        "listAdjustmentApplications",
        "Adjustment applications",
        application.clone(),
        e,
    );
    b.operation(&p("/adjustment-applications"), "get", built);
    let built = one(
        "billing",
        "getAdjustmentApplication",
        "One adjustment application",
        application,
        &[pid("id")],
        e,
    );
    b.operation(&p("/adjustment-applications/{id}"), "get", built);
    let category = b.schema::<AdjustmentCategory>();
    let statuses = enumeration(shared::domain::catalog::CATEGORY_STATUSES);
    let list = List {
        filters: vec![filter("name", string()), filter("status", statuses)],
        ..Default::default()
    };
    let built = list.build(
        "listAdjustmentCategories",
        "Adjustment categories",
        category.clone(),
        e,
    );
    b.operation(&p("/adjustment-categories"), "get", built);
    let built = one(
        "billing",
        "getAdjustmentCategory",
        "One adjustment category",
        category,
        &[pid("id")],
        e,
    );
    b.operation(&p("/adjustment-categories/{id}"), "get", built);

    // Agreements and their services.
    let agreement = b.schema::<Agreement>();
    let filters = vec![
        filter("valid_from", dt.clone()),
        filter("valid_to", dt),
        filter("name", string()),
        filter("product_id", string()),
        filter("status", string()),
        filter("termination_fee_currency_code", currency.clone()),
        filter("max_termination_fee_currency_code", currency.clone()),
    ];
    let list = List {
        filters,
        ..Default::default()
    };
    b.operation(
        &p("/agreements"),
        "get",
        list.build("listAgreements", "Agreements", agreement.clone(), e),
    );
    b.operation(
        &p("/agreements/{id}"),
        "get",
        one(
            "billing",
            "getAgreement",
            "One agreement",
            agreement,
            &[pid("id")],
            e,
        ),
    );
    agreement_services(&mut b, e);

    // Bill batches.
    let batch = b.schema::<BillBatch>();
    let filters = vec![
        filter(
            "bill_batch_type",
            enumeration(shared::domain::bill_batches::BILL_BATCH_TYPES),
        ),
        filter("name", string()),
        param(
            "status",
            "query",
            enumeration(shared::domain::bill_batches::BILL_BATCH_STATUSES),
            Some("Default ACTIVE"),
        ),
        filter("currency_code", currency),
        filter("billing_account_id", string()),
        filter("account_num", string()),
        filter("external_account_num", string()),
        param(
            "expand",
            "query",
            string(),
            Some("bill_batch_runs or bill_batch_runs.invoices"),
        ),
    ];
    let list = List {
        filters,
        ..Default::default()
    };
    let built = list.build(
        "listBillBatches",
        "Bill batches (status ACTIVE unless named)",
        batch.clone(),
        e,
    );
    b.operation(&p("/bill-batches"), "get", built);
    let create = op(
        "billing",
        "createBillBatch",
        "Create a bill batch (answers 200)",
        e,
    )
    .body(b.schema::<CreateBody>(), true);
    let create = write(create, 200, batch.clone(), &[], true).errors(&[400, 401, 413, 415, 503], e);
    b.operation(&p("/bill-batches"), "post", create.build());
    let expand = param(
        "expand",
        "query",
        string(),
        Some("bill_batch_runs, bill_batch_runs.invoices or invoices"),
    );
    let built = one(
        "billing",
        "getBillBatch",
        "One bill batch",
        batch,
        &[pid("id"), expand],
        e,
    );
    b.operation(&p("/bill-batches/{id}"), "get", built);
    let filters = vec![
        filter("account_num", string()),
        filter("external_account_num", string()),
    ];
    let list = List {
        filters,
        path_params: vec![pid("bill_batch_id")],
        extra_errors: &[404],
        ..Default::default()
    };
    let account = b.schema::<AccountRef>();
    let built = list.build(
        "listBillBatchAccounts",
        "Billing accounts of a bill batch",
        account,
        e,
    );
    b.operation(
        &p("/bill-batches/{bill_batch_id}/billing-accounts"),
        "get",
        built,
    );

    usage(&mut b, e);
    simple_shape(
        &mut b,
        &[
            "Action",
            "AdjustmentApplication",
            "AdjustmentCategory",
            "Agreement",
            "AgreementService",
            "TrueUpRelation",
            "BillBatch",
            "BillingAccountRef",
            "RatedEvent",
        ],
    );
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

/// The SIMPLE shape (`return=SIMPLE`, `Prefer: return=minimal`; `web::listing::simplify`)
/// leaves out a record's arrays and reduces its nested objects to `{id}`. So in the schemas of
/// the `records` a read answers, an array member is not required, and a schema a member
/// refers to requires only `id`.
fn simple_shape(b: &mut Builder, records: &[&str]) {
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

/// A CPQ discount of a billing account reference (the sandbox keeps none: no type renders one).
fn cpq_discount() -> Value {
    let nullable = |t: &str| json!({ "type": [t, "null"] });
    let dt = json!({ "type": ["string", "null"], "format": "date-time" });
    let mut decimal = serde_json::to_value(shared::schema::decimal_or_null()).expect("schema");
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

/// Agreement services, their PUT and their true-up relations.
fn agreement_services(b: &mut Builder, e: &Value) {
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    let service = b.schema::<AgreementService>();
    let filters = vec![
        filter("service_id", string()),
        filter(
            "service_resource_identifier",
            json!({ "type": "string", "maxLength": crate::resources::agreement_services::MAX_SRID_CHARS }),
        ),
        filter("child_service_resource_identifier", string()),
        filter("product_id", string()),
        filter("billing_account_id", string()),
        filter("account_num", string()),
        filter("external_account_num", string()),
        filter(
            "status",
            enumeration(shared::domain::agreements::AGREEMENT_SERVICE_STATUSES),
        ),
    ];
    let list = List {
        filters,
        ..Default::default()
    };
    let built = list.build(
        "listAgreementServices",
        "Agreement services",
        service.clone(),
        e,
    );
    b.operation(&p("/agreement-services"), "get", built);
    let one_path = p("/agreement-services/{id}");
    let built = one(
        "billing",
        "getAgreementService",
        "One agreement service",
        service.clone(),
        &[pid("id")],
        e,
    );
    b.operation(&one_path, "get", built);
    let put = op(
        "billing",
        "updateAgreementService",
        "Partial update of an agreement service",
        e,
    )
    .body(b.schema::<Patch>(), true);
    let put =
        write(put, 200, service, &[pid("id")], true).errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&one_path, "put", put.build());

    let relations = p("/agreement-services/{agreement_service_id}/true-up-charge-type-relations");
    let relation = b.schema::<Relation>();
    let list = List {
        path_params: vec![pid("agreement_service_id")],
        extra_errors: &[404],
        ..Default::default()
    };
    let built = list.build(
        "listTrueUpRelations",
        "True-up charge type relations",
        relation.clone(),
        e,
    );
    b.operation(&relations, "get", built);
    let create = op(
        "billing",
        "createTrueUpRelation",
        "Create a true-up charge type relation",
        e,
    )
    .body(b.schema::<NewRelation>(), true);
    let create = write(
        create,
        201,
        relation.clone(),
        &[pid("agreement_service_id")],
        true,
    )
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&relations, "post", create.build());
    let one_relation = format!("{relations}/{{id}}");
    let ids = [pid("agreement_service_id"), pid("id")];
    let built = one(
        "billing",
        "getTrueUpRelation",
        "One true-up charge type relation",
        relation,
        &ids,
        e,
    );
    b.operation(&one_relation, "get", built);
    let delete = op("billing", "deleteTrueUpRelation", "Delete a relation", e)
        .params(&ids)
        .answer_described(204, "Deleted; empty body", None)
        .errors(&[400, 401, 404, 503], e);
    b.operation(&one_relation, "delete", delete.build());
}

/// Usage events: posting, simulating, reading.
fn usage(b: &mut Builder, e: &Value) {
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    b.named(
        "UsageEvent",
        serde_json::to_value(shared::domain::usage::usage_event()).expect("schema"),
    );
    let request = b.schema::<BulkRequest>();
    let outcome = b.schema::<BulkOutcome>();
    let simulated = simulation(b);
    let example = json!({ "mode": "OVERWRITE_ON_EXISTING", "usage_events": [
        { "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90, "start_time": "2026-02-01", "reference_id": "batch-1", "sequence_id": "1" },
        { "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150, "start_time": "2026-02-01T10:00:00-06:00" },
    ]});
    const ERRORS: &[u16] = &[400, 401, 413, 415, 503];
    let post = op(
        "usage",
        "postUsageEvents",
        "Rate and store 1..50 usage events",
        e,
    )
    .body(request.clone(), true)
    .example(example.clone());
    let post = write(post, 200, outcome, &[], false).errors(ERRORS, e);
    b.operation(&p("/usage-events/bulk"), "post", post.build());
    let sim = op(
        "usage",
        "simulateUsageEvents",
        "Rate 1..50 usage events without storing anything",
        e,
    )
    .body(request, true)
    .example(example);
    let sim = write(sim, 200, simulated, &[], false).errors(ERRORS, e);
    b.operation(&p("/usage-events/simulate/bulk"), "post", sim.build());
    let rated = b.schema::<RatedEvent>();
    let filters = [
        "reference_id",
        "request_id",
        "service_period_id",
        "account_num",
        "billing_account_id",
        "sequence_id",
    ]
    .map(|name| filter(name, string()))
    .to_vec();
    let list = List {
        tag: "usage",
        filters,
        ..Default::default()
    };
    let built = list.build(
        "listUsageEvents",
        "Rated usage events (at least one narrowing parameter)",
        rated.clone(),
        e,
    );
    b.operation(&p("/usage-events"), "get", built);
    let built = one(
        "usage",
        "getUsageEvent",
        "One rated usage event (voided or live)",
        rated,
        &[pid("id")],
        e,
    );
    b.operation(&p("/usage-events/{id}"), "get", built);
}

/// A simulation answers what posting answers minus request_id; its ids name nothing stored:
/// "-1", "-2", ... in answer order. Its schemas are the rated event's with those changes.
fn simulation(b: &mut Builder) -> Value {
    b.schema::<ErredEvent>();
    let sim_id = json!({
        "type": "string",
        "pattern": "^-[1-9][0-9]*$",
        "description": "Simulated id: -n for the n-th item of the answer; names nothing stored.",
    });
    let require_id = |schema: &mut Value| {
        let required = schema["required"].as_array_mut().expect("required");
        required.retain(|r| r != "id");
        required.insert(0, json!("id"));
    };
    let mut charge = b.get("EventCharge").expect("EventCharge").clone();
    charge["properties"]["id"] = sim_id.clone();
    require_id(&mut charge);
    charge["description"] = json!("An event charge of a simulation.");
    let charge = b.named("SimulatedEventCharge", charge);
    let mut event = b.get("RatedEvent").expect("RatedEvent").clone();
    let properties = event["properties"].as_object_mut().expect("properties");
    properties.remove("request_id");
    properties.insert("id".into(), sim_id);
    properties.insert("event_charges".into(), array(charge));
    require_id(&mut event);
    event["not"] = json!({ "required": ["request_id"] });
    event["description"] = json!("A rated event of a simulation: no request_id, a simulated id.");
    let event = b.named("SimulatedEvent", event);
    let erred = shared::web::openapi::reference("ErredEvent");
    b.named(
        "SimulationOutcome",
        json!({
            "type": "object",
            "properties": { "rated_events": array(event), "erred_events": array(erred) },
            "required": ["rated_events", "erred_events"],
        }),
    )
}
