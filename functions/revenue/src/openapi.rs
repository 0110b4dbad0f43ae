//! Surface C's OpenAPI 3.1 document, built from its operations (below) and the domain types of
//! their bodies (`ToSchema`, see `shared::web::openapi`), served at `<prefix>/openapi.json`
//! under both base paths and committed as docs/openapi/revenue.json (the e2e test `openapi`
//! checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it). Paths are relative to the
//! two `servers` entries, `/revenue/3` (the docs' one, first) and the platform's `/calypso/3`.

use serde_json::{json, Value};
use shared::domain::calendars::view::{HistoryEntry, Year};
use shared::domain::calendars::NewYear;
use shared::domain::chargeinfo::{ChargeInfo, Deleted, Ids};
use shared::domain::collect::catalogue::Collector;
use shared::domain::collect::{CollectorRun, NewCollectorRun, RunError};
use shared::domain::glrun::{GlRun, JournalEntry, NewGlRun};
use shared::domain::ledgers::{Ledger, LedgerFields, ListedLedger};
use shared::domain::replication::ReplicationSummary;
use shared::web::listing::{REVENUE_COUNT_HEADERS, REVENUE_PAGING};
use shared::web::openapi::{
    array, document_operations, omit_total_count, param, string, with_idempotency, Builder, Op,
    Served,
};
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

/// The document.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    const READ: &[u16] = &[400, 401, 404, 503];
    const LIST: &[u16] = &[400, 401, 503];
    const BODY: &[u16] = &[400, 401, 404, 409, 413, 415, 503];
    let id = cid("id");
    let year_ids = [cid("id"), cid("yid")];
    let period_ids = [cid("id"), cid("yid"), cid("pid")];
    let ledger = b.schema::<Ledger>();
    let fields = b.schema::<LedgerFields>();
    let enumeration = |values: &[&str]| json!({ "type": "string", "enum": values });

    document_operations(&mut b, "", "revenue");
    let filters = [
        query("id", int64(), None),
        query("name", string(), None),
        query(
            "status",
            enumeration(shared::domain::ledgers::LEDGER_STATUSES),
            None,
        ),
        query(
            "convert_currency",
            enumeration(shared::domain::ledgers::CONVERT_CURRENCY),
            None,
        ),
        query(
            "conversion_currency",
            enumeration(shared::money::CURRENCY_CODES),
            None,
        ),
        query("chart_of_account_id", int64(), None),
        query("rule_set_id", int64(), None),
    ];
    let items = b.schema::<ListedLedger>();
    let list = paged(op("listLedgers", "AR ledgers"), &filters, items, e, LIST);
    b.operation("/ledgers", "get", list);
    let create = op("createLedger", "Create an AR ledger")
        .answer(201, Some(ledger.clone()))
        .body(fields.clone(), true)
        .example(json!({ "name": "EU Ledger", "chart_of_account_id": 1, "rule_set_id": 1, "billing_account_category_ids": [1], "timezone_name": "Europe/Berlin" }))
        .errors(BODY, e);
    b.operation("/ledgers", "post", create.build());
    let l = "/ledgers/{id}";
    let get = op("getLedger", "One AR ledger")
        .params([&id])
        .answer(200, Some(ledger.clone()));
    b.operation(l, "get", get.errors(READ, e).build());
    let put = op("updateLedger", "Update an AR ledger")
        .params([&id])
        .answer(200, Some(ledger.clone()))
        .body(fields, true)
        .errors(BODY, e);
    b.operation(l, "put", put.build());
    let delete = op("deleteLedger", "Delete an AR ledger and what hangs on it")
        .params([&id])
        .answer_described(200, "Deleted; empty body", None)
        .errors(READ, e);
    b.operation(l, "delete", delete.build());

    // Calendars.
    let new_year = b.schema::<NewYear>();
    let generate = query(
        "generate-periods",
        json!({ "type": "boolean" }),
        Some("Default false"),
    );
    let create = op("createYear", "Add an accounting year")
        .params([&id, &generate])
        .answer(200, Some(ledger.clone()))
        .body(new_year.clone(), true)
        .example(json!({ "name": "FY2030", "start_date": "2030-01-01", "end_date": "2030-12-31" }))
        .errors(BODY, e);
    b.operation("/ledgers/{id}/calendar/years", "post", create.build());
    let y = "/ledgers/{id}/calendar/years/{yid}";
    let year = b.schema::<Year>();
    let get = op("getYear", "One accounting year")
        .params(&year_ids)
        .answer(200, Some(year));
    b.operation(y, "get", get.errors(READ, e).build());
    let put = op("updateYear", "Update an accounting year")
        .params(&year_ids)
        .answer(200, Some(ledger.clone()))
        .body(new_year, true)
        .errors(BODY, e);
    b.operation(y, "put", put.build());
    let delete = op("deleteYear", "Delete an accounting year")
        .params(&year_ids)
        .answer(200, Some(ledger.clone()))
        .errors(&[400, 401, 404, 409, 503], e);
    b.operation(y, "delete", delete.build());
    let per = format!("{y}/accounting-periods/{{pid}}");
    for (verb, id_, summary) in [
        ("open", "openPeriod", "Open a period"),
        ("close", "closePeriod", "Close a period"),
    ] {
        let o = op(id_, summary)
            .params(&period_ids)
            .answer(200, Some(ledger.clone()));
        b.operation(&format!("{per}/{verb}"), "put", o.errors(READ, e).build());
    }
    let history = b.schema::<HistoryEntry>();
    let o = op("periodHistory", "Open/close history of a period");
    b.operation(
        &format!("{per}/history"),
        "get",
        paged(o, &period_ids, history, e, READ),
    );

    // Collectors and their runs.
    let collector = b.schema::<Collector>();
    let o = op(
        "listCollectors",
        "Collectors a run can name: the catalogue, then the platform operations (INSERT_SERVICES, ...; group PLATFORM)",
    );
    let filters = [
        query("group", string(), None),
        query("category", string(), None),
    ];
    b.operation("/collectors", "get", paged(o, &filters, collector, e, LIST));
    let run = b.schema::<CollectorRun>();
    let o = op("listCollectorRuns", "Collector runs, newest first");
    b.operation(
        "/collector-runs",
        "get",
        paged(o, &[], run.clone(), e, LIST),
    );
    let start = op(
        "startCollectorRun",
        "Start a collector run (finishes in the request)",
    )
    .answer(201, Some(run.clone()))
    .body(b.schema::<NewCollectorRun>(), true)
    .example(json!({ "type": "MANUAL", "collector_operations": [] }))
    .errors(&[400, 401, 409, 412, 413, 415, 503], e);
    b.operation("/collector-runs", "post", start.build());
    let get = op("getCollectorRun", "One collector run")
        .params([&id])
        .answer(200, Some(run));
    b.operation("/collector-runs/{id}", "get", get.errors(READ, e).build());
    let run_error = b.schema::<RunError>();
    let o = op("collectorRunErrors", "Errors of a collector run");
    let list = paged(o, std::slice::from_ref(&id), run_error.clone(), e, READ);
    b.operation("/collector-runs/{id}/errors", "get", list);

    // Ledger runs.
    let gl_run = b.schema::<GlRun>();
    let status = [query(
        "status",
        enumeration(shared::domain::glrun::RUN_STATUSES),
        None,
    )];
    let o = op("listGlRuns", "Ledger runs, newest first");
    b.operation("/glruns", "get", paged(o, &status, gl_run.clone(), e, LIST));
    let start = op("startGlRun", "Start a ledger run (finishes in the request)")
        .answer(201, Some(gl_run.clone()))
        .body(b.schema::<NewGlRun>(), true)
        .example(json!({ "ledger_id": 1, "run_to_date": "2026-12-01" }))
        .errors(&[400, 401, 404, 409, 412, 413, 415, 503], e);
    b.operation("/glruns", "post", start.build());
    let get = op("getGlRun", "One ledger run")
        .params([&id])
        .answer(200, Some(gl_run.clone()));
    b.operation("/glruns/{id}", "get", get.errors(READ, e).build());
    let delete = op("deleteGlRun", "Delete a ledger run and its results")
        .params([&id])
        .answer_described(200, "Deleted; empty body", None)
        .errors(READ, e);
    b.operation("/glruns/{id}", "delete", delete.build());
    let o = op("glRunErrors", "Errors of a ledger run");
    let list = paged(o, std::slice::from_ref(&id), run_error, e, READ);
    b.operation("/glruns/{id}/errors", "get", list);
    let entry = b.schema::<JournalEntry>();
    let o = op(
        "glRunJournalEntries",
        "Journal entries a ledger run posted (sandbox extension)",
    );
    let list = paged(o, std::slice::from_ref(&id), entry, e, READ);
    b.operation("/glruns/{id}/journal-entries", "get", list);
    let runs = op("ledgerGlRuns", "Every run of a ledger, newest first")
        .params([&id])
        .answer(200, Some(array(gl_run)))
        .errors(READ, e);
    b.operation("/ledgers/{id}/glruns", "get", runs.build());

    charge_infos(&mut b, &id, e);
    let batch = query(
        "batch_size",
        json!({ "type": "integer", "minimum": 1, "maximum": 10000 }),
        Some("Default 1000"),
    );
    let replicate = op("replicateSvs", "Copy the SVS views to the analytics store")
        .params([&batch])
        .answer(201, Some(b.schema::<ReplicationSummary>()))
        .errors(LIST, e);
    b.operation("/replication/svs", "post", replicate.build());

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

/// Charge info: the lists, the merged list, a ledger's, and the deletions.
fn charge_infos(b: &mut Builder, id: &Value, e: &Value) {
    let charge_info = b.schema::<ChargeInfo>();
    let (ids, deleted) = (b.schema::<Ids>(), b.schema::<Deleted>());
    let filters = [
        query("billing_account", string(), Some("Account number or id")),
        query("invoice_number", string(), None),
        query("charge_info_type", string(), None),
        query("charge_category", string(), Some("Category name")),
        query(
            "created_from",
            string(),
            Some("Date-time or date, inclusive"),
        ),
        query("created_to", string(), Some("Date-time or date, exclusive")),
        query("service_id", int64(), None),
        query("product_id", int64(), None),
        query("order_number", string(), None),
    ];
    let mut all = filters.to_vec();
    all.extend([
        query("is_parent", json!({ "type": "boolean" }), None),
        query("parent_id", int64(), None),
        query(
            "max_records",
            json!({ "type": "integer", "format": "int64", "minimum": 1 }),
            Some("Caps the matching set; default 1000"),
        ),
    ]);
    let o = op("listChargeInfos", "Charge info records");
    let list = paged(o, &all, charge_info.clone(), e, &[400, 401, 503]);
    b.operation("/ledgers/chargeinfos", "get", list);
    let delete = op("deleteChargeInfos", "Delete charge info records")
        .answer(200, Some(deleted.clone()))
        .body(ids.clone(), true)
        .errors(&[400, 401, 413, 415, 503], e);
    b.operation("/ledgers/chargeinfos", "delete", delete.build());
    let o = op(
        "listMergedChargeInfos",
        "Charge info with usage children merged into their parent",
    );
    let list = paged(o, &filters, charge_info.clone(), e, &[400, 401, 503]);
    b.operation("/ledgers/merged-chargeinfos", "get", list);
    let mut own = vec![id.clone(), query("gl_event_id", int64(), None)];
    for name in ["created_from", "created_to", "updated_from", "updated_to"] {
        own.push(query(name, string(), Some("Date-time or date")));
    }
    let o = op(
        "ledgerChargeInfos",
        "Charge info of a ledger with its state",
    );
    let list = paged(o, &own, charge_info, e, &[400, 401, 404, 503]);
    b.operation("/ledgers/{id}/chargeinfos", "get", list);
    let delete = op(
        "deleteChargeInfoStates",
        "Delete charge info states in a ledger",
    )
    .params([id])
    .answer(200, Some(deleted))
    .body(ids, true)
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation("/ledgers/{id}/chargeinfos/state", "delete", delete.build());
}
