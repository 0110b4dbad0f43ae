//! `GET /billing/2/openapi.json`: Surface B's OpenAPI 3.1 document (usage events included),
//! served without credentials, built from its operations (below) and the Rust types of their
//! bodies (`ToSchema` derives on the resources and on `shared::domain::usage`; see
//! `shared::web::openapi`) and committed as docs/openapi/billing.json (the e2e test `openapi`
//! checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it).

mod operations;
mod services;
mod usage;

use crate::resources::actions::Action;
use crate::resources::adjustment_applications::AdjustmentApplication;
use crate::resources::adjustment_categories::AdjustmentCategory;
use crate::resources::agreements::Agreement;
use crate::resources::bill_batches::{BillBatch, CreateBody, Invoice, Run};
use crate::resources::AccountRef;
use operations::{enumeration, filter, one, op, pid, simple_shape, write, List};
use serde_json::{json, Value};
use shared::web::openapi::{
    document_operations, param, schema_value, string, with_idempotency, Builder, Served,
};
use shared::web::{ApiError, BILLING_PREFIX};

/// The document, built on first use: served without credentials at `.../openapi.json`,
/// committed as docs/openapi/*.json.
pub static DOCUMENT: Served = Served::new(document);

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
    document_operations(&mut b, BILLING_PREFIX, "billing");

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
    List::new(filters).collection(
        &mut b,
        &p("/actions"),
        action.clone(),
        [("listActions", "Actions"), ("getAction", "One action")],
        e,
    );
    let list = List {
        path_params: vec![pid("bill_cycle_id")],
        extra_errors: &[404],
        ..List::new(vec![])
    };
    list.collection(
        &mut b,
        &p("/bill-cycles/{bill_cycle_id}/actions"),
        action,
        [
            ("listBillCycleActions", "Actions of a bill cycle"),
            ("getBillCycleAction", "One action of a bill cycle"),
        ],
        e,
    );

    // Adjustments.
    let application = b.schema::<AdjustmentApplication>();
    let decimal = json!({ "type": "string", "description": "Exact decimal" });
    let types = shared::domain::adjustments::ADJUSTMENT_APPLICATION_TYPES;
    let filters = vec![
        filter("adjustment_id", string()),
        filter("billing_account_id", string()),
        filter("account_num", string()),
        filter("occurred_on", dt.clone()),
        filter("unapplied_amount", decimal),
        filter("adjustment_application_type", enumeration(types)),
    ];
    List::new(filters).collection(
        &mut b,
        &p("/adjustment-applications"),
        application,
        [
            ("listAdjustmentApplications", "Adjustment applications"),
            ("getAdjustmentApplication", "One adjustment application"),
        ],
        e,
    );
    let category = b.schema::<AdjustmentCategory>();
    let statuses = enumeration(shared::domain::catalog::CATEGORY_STATUSES);
    List::new(vec![filter("name", string()), filter("status", statuses)]).collection(
        &mut b,
        &p("/adjustment-categories"),
        category,
        [
            ("listAdjustmentCategories", "Adjustment categories"),
            ("getAdjustmentCategory", "One adjustment category"),
        ],
        e,
    );

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
    List::new(filters).collection(
        &mut b,
        &p("/agreements"),
        agreement,
        [
            ("listAgreements", "Agreements"),
            ("getAgreement", "One agreement"),
        ],
        e,
    );
    services::agreement_services(&mut b, e);

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
    let built = List::new(filters).build(
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
        path_params: vec![pid("bill_batch_id")],
        extra_errors: &[404],
        ..List::new(filters)
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

    usage::usage(&mut b, e);
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

/// A CPQ discount of a billing account reference (the sandbox keeps none: no type renders one).
fn cpq_discount() -> Value {
    let nullable = |t: &str| json!({ "type": [t, "null"] });
    let dt = json!({ "type": ["string", "null"], "format": "date-time" });
    let mut decimal = schema_value(shared::schema::decimal_or_null());
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
