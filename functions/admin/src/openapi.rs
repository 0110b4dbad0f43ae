//! The admin API's OpenAPI 3.1 document, built from its operations (below) and the Rust types
//! of their bodies (`ToSchema`, see `shared::web::openapi`), served at
//! `GET /sandbox/v1/openapi.json` and committed as docs/openapi/admin.json (the e2e test
//! `openapi` checks the file equals [`text`]; `OPENAPI_WRITE=1` rewrites it). Operations are
//! listed here once per route; the test also checks them against the routers.

use crate::fixtures::Applied;
use crate::powers::AdvanceClock;
use crate::{
    CreateCheckpoint, CreateTenant, CreatedTenant, ResetDone, ResetRequest, Restored, TenantDryRun,
    Token, TokenRequest,
};
use serde_json::{json, Value};
use shared::sandbox::clock::{Advanced, ClockView, Setting};
use shared::sandbox::faults::{NewRule, Rule};
use shared::sandbox::journal::Entry;
use shared::sandbox::undo::Undone;
use shared::store::checkpoints::Checkpoint;
use shared::store::TenantRecord;
use shared::web::openapi::{
    array, document_operations, json_content, param, schema_value, string, with_idempotency_on,
    Builder, Op, Served,
};
use shared::web::{ApiError, ADMIN_PREFIX};

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

/// One operation of the admin API, its errors described by [`describe`].
fn op(id: &str, summary: &str) -> Op {
    Op::new("admin", id, summary, describe)
}

/// The paging headers of the admin lists (tenants, journal).
fn counts() -> Value {
    let count =
        |what: &str| json!({ "description": what, "schema": { "type": "integer", "minimum": 0 } });
    json!({
        "X-Total-Count": count("Entries matching"),
        "X-Elements-Count": count("Entries in this answer"),
        "X-Total-Pages": count("Pages of the current size"),
    })
}

/// `page_number` and `page_size` of the admin lists (`powers::JOURNAL_PAGING`).
fn paging() -> [Value; 2] {
    [
        param(
            "page_number",
            "query",
            json!({ "type": "integer", "minimum": 1 }),
            None,
        ),
        param(
            "page_size",
            "query",
            json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
            None,
        ),
    ]
}

/// The document.
pub fn document() -> Value {
    let mut b = Builder::new();
    let e = &b.schema::<ApiError>();
    let p = ADMIN_PREFIX;
    let tid = &param("id", "path", string(), None);
    let any = || json!({ "type": "object", "additionalProperties": true });
    document_operations(&mut b, p, "admin");
    b.operation(
        &format!("{p}/fixtures.schema.json"),
        "get",
        json!({
            "operationId": "fixturesSchema",
            "summary": "The JSON Schema of a fixture document (docs/fixtures.md), derived from the types the loader reads",
            "security": [],
            "tags": ["meta"],
            "responses": { "200": { "description": "The schema", "content": json_content(any()) } },
        }),
    );

    // Tenants.
    let tenants = format!("{p}/tenants");
    let tenant = format!("{p}/tenants/{{id}}");
    let created = b.schema::<CreatedTenant>();
    let new_tenant = b.schema::<CreateTenant>();
    let dry_run = &param(
        "dry_run",
        "query",
        json!({ "type": "boolean", "default": false }),
        Some("true: validate and answer what would be written (200), changing nothing"),
    );
    let rehearsed = b.schema::<TenantDryRun>();
    let op_ = op(
        "createTenant",
        "Create a tenant with credentials (or fork one); with dry_run=true, validate the seed or fixtures and answer what would be created, registering nothing",
    )
    .params([dry_run])
    .answer(201, Some(created))
    .answer_described(200, "Dry run: what would be created", Some(rehearsed))
    .body(new_tenant, true)
    .errors(&[400, 401, 404, 409, 413, 415, 503], e);
    b.operation(&tenants, "post", op_.build());
    let [page_number, page_size] = &paging();
    let list = array(b.schema::<TenantRecord>());
    let op_ = op("listTenants", "A page of the tenants, oldest first")
        .params([page_number, page_size])
        .answer(200, Some(list))
        .headers(200, counts())
        .errors(&[400, 401, 503], e);
    b.operation(&tenants, "get", op_.build());
    let one = b.schema::<TenantRecord>();
    let op_ = op("getTenant", "One tenant")
        .params([tid])
        .answer(200, Some(one))
        .errors(&[401, 404, 503], e);
    b.operation(&tenant, "get", op_.build());
    let op_ = op("deleteTenant", "Delete a tenant and its data")
        .params([tid])
        .answer(204, None)
        .errors(&[401, 404, 503], e);
    b.operation(&tenant, "delete", op_.build());
    let (token, token_request) = (b.schema::<Token>(), b.schema::<TokenRequest>());
    let op_ = op("issueToken", "Issue a bearer JWT for Surface B")
        .params([tid])
        .answer(201, Some(token))
        .body(token_request, false)
        .errors(&[400, 401, 404, 413, 503], e);
    b.operation(&format!("{tenant}/tokens"), "post", op_.build());
    let (done, reset) = (b.schema::<ResetDone>(), b.schema::<ResetRequest>());
    let op_ = op("resetTenant", "Reset a tenant's data to a seed")
        .params([tid])
        .answer(200, Some(done))
        .body(reset, true)
        .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&format!("{tenant}/reset"), "post", op_.build());

    // Fixtures.
    let fixtures = format!("{tenant}/fixtures");
    let op_ = op(
        "exportFixtures",
        "The tenant's data as a fixture document (docs/fixtures.md): ids included, absolute dates, records in id order",
    )
    .params([tid])
    .answer(200, Some(json!({ "type": "object", "description": "A fixture document" })))
    .errors(&[401, 404, 422, 503], e);
    b.operation(&fixtures, "get", op_.build());
    let applied = b.schema::<Applied>();
    let mut document = any();
    document["description"] = json!("A fixture document");
    let op_ = op(
        "applyFixtures",
        "Apply a fixture document (docs/fixtures.md) to the tenant in one write, all or nothing; records whose id exists are updated in place, the others created, nothing deleted; a refusal names the JSON path of its first problem; with dry_run=true, validate and answer what would be created and updated, changing nothing",
    )
    .params([tid, dry_run])
    .answer(200, Some(applied))
    .body(document, true)
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&fixtures, "post", op_.build());

    checkpoints(&mut b, &tenant, tid, e);
    powers(&mut b, &tenant, tid, e);
    billing_policy(&mut b, &tenant, tid, e);
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
    with_idempotency_on(&mut doc, e, KEY_TEXT, keyed);
    doc
}

/// What Idempotency-Key promises on the admin writes that keep it (docs/storage.md,
/// "Idempotency keys": the tenant's database or the registry holds the key with the write).
const KEY_TEXT: &str = "Optional: makes a retry of this write safe. The same key with the same request (method, path, query, body) replays the first answer (with Idempotent-Replayed: true) instead of running again: a retried tenant creation gets the same tenant and credentials. Kept 24 hours (a tenant's writes by its clock, creations and deletions by the server's clock), at most 10,000 keys; 409 while the first is in flight or when it was applied without a recorded answer; 422 with a different request.";

/// The admin writes whose key is stored with them. The others (tokens, journal clear,
/// checkpoint deletion) accept the header but run again on a retry, so the document does
/// not promise it there.
fn keyed(path: &str, method: &str) -> bool {
    let tenant = format!("{ADMIN_PREFIX}/tenants/{{id}}");
    match path.strip_prefix(&tenant) {
        None => path == format!("{ADMIN_PREFIX}/tenants") && method == "post",
        Some(rest) => matches!(
            (rest, method),
            ("", "delete")
                | ("/clock", "put")
                | ("/clock/advance", "post")
                | ("/clock/undo", "post")
                | ("/faults", "post" | "delete")
                | ("/faults/{rule}", "delete")
                | ("/fixtures", "post")
                | ("/policy", "put")
                | ("/reset", "post")
                | ("/restore", "post")
                | ("/checkpoints", "post")
        ),
    }
}

/// The tenant's billing policy.
fn billing_policy(b: &mut Builder, tenant: &str, tid: &Value, e: &Value) {
    let path = format!("{tenant}/policy");
    let (policy, change) = (
        b.schema::<shared::domain::policy::BillingPolicy>(),
        b.schema::<shared::domain::policy::PolicyChange>(),
    );
    let op_ = op(
        "getPolicy",
        "The tenant's billing policy (every member, defaults included)",
    )
    .params([tid])
    .answer(200, Some(policy.clone()))
    .errors(&[401, 404, 503], e);
    b.operation(&path, "get", op_.build());
    let op_ = op(
        "setPolicy",
        "Change the tenant's billing policy: the members given are checked and set, the others kept; a refusal names the member and its allowed values and changes nothing",
    )
    .params([tid])
    .answer(200, Some(policy))
    .body(change, true)
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&path, "put", op_.build());
}

/// Checkpoints, restore (forks are `POST /tenants` with `from`).
fn checkpoints(b: &mut Builder, tenant: &str, tid: &Value, e: &Value) {
    let name = &param("name", "path", schema_value(crate::checkpoint_name()), None);
    let list = format!("{tenant}/checkpoints");
    let one = format!("{tenant}/checkpoints/{{name}}");
    let (checkpoint, new) = (b.schema::<Checkpoint>(), b.schema::<CreateCheckpoint>());
    let op_ = op("createCheckpoint", "Checkpoint the tenant's current data")
        .params([tid])
        .answer(201, Some(checkpoint.clone()))
        .body(new, true)
        .errors(&[400, 401, 404, 409, 413, 415, 503], e);
    b.operation(&list, "post", op_.build());
    let op_ = op("listCheckpoints", "The tenant's checkpoints, oldest first")
        .params([tid])
        .answer(200, Some(array(checkpoint.clone())))
        .errors(&[401, 404, 503], e);
    b.operation(&list, "get", op_.build());
    let op_ = op("getCheckpoint", "One checkpoint")
        .params([tid, name])
        .answer(200, Some(checkpoint))
        .errors(&[400, 401, 404, 503], e);
    b.operation(&one, "get", op_.build());
    let op_ = op(
        "deleteCheckpoint",
        "Delete a checkpoint (restores and forks made from it keep their data)",
    )
    .params([tid, name])
    .answer(204, None)
    .errors(&[400, 401, 404, 503], e);
    b.operation(&one, "delete", op_.build());
    let (restored, request) = (b.schema::<Restored>(), b.schema::<crate::RestoreRequest>());
    let op_ = op(
        "restoreCheckpoint",
        "Replace the tenant's data with a checkpoint's (credentials kept)",
    )
    .params([tid])
    .answer(200, Some(restored))
    .body(request, true)
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&format!("{tenant}/restore"), "post", op_.build());
}

/// The sandbox powers of one tenant: test clock, fault rules, request journal.
fn powers(b: &mut Builder, tenant: &str, tid: &Value, e: &Value) {
    const WRITE: &[u16] = &[400, 401, 404, 413, 415, 503];
    const READ: &[u16] = &[401, 404, 503];
    let rid = &param("rule", "path", string(), None);
    let clock = format!("{tenant}/clock");
    let (view, setting) = (b.schema::<ClockView>(), b.schema::<Setting>());
    let op_ = op("getClock", "The tenant's test clock")
        .params([tid])
        .answer(200, Some(view.clone()))
        .errors(READ, e);
    b.operation(&clock, "get", op_.build());
    let op_ = op(
        "setClock",
        "Freeze the clock at an instant, or return it to real time",
    )
    .params([tid])
    .answer(200, Some(view))
    .body(setting, true)
    .errors(WRITE, e);
    b.operation(&clock, "put", op_.build());
    let (advanced, advance) = (b.schema::<Advanced>(), b.schema::<AdvanceClock>());
    let op_ = op(
        "advanceClock",
        "Move the clock forward, running the transitions due on the way",
    )
    .params([tid])
    .answer(200, Some(advanced))
    .body(advance, true)
    .errors(WRITE, e);
    b.operation(&format!("{clock}/advance"), "post", op_.build());
    let undone = b.schema::<Undone>();
    let op_ = op(
        "undoClockAdvance",
        "Undo the newest clock advance: restore the automatic checkpoint it kept (409 when none is kept)",
    )
    .params([tid])
    .answer(200, Some(undone))
    .errors(&[401, 404, 409, 503], e);
    b.operation(&format!("{clock}/undo"), "post", op_.build());

    let faults = format!("{tenant}/faults");
    let fault = format!("{tenant}/faults/{{rule}}");
    let (rule, new_rule) = (b.schema::<Rule>(), b.schema::<NewRule>());
    let op_ = op("createFault", "Add a fault rule")
        .params([tid])
        .answer(201, Some(rule.clone()))
        .body(new_rule, true)
        .errors(WRITE, e);
    b.operation(&faults, "post", op_.build());
    let op_ = op(
        "listFaults",
        "The tenant's fault rules, in the order they are tried",
    )
    .params([tid])
    .answer(200, Some(array(rule.clone())))
    .errors(READ, e);
    b.operation(&faults, "get", op_.build());
    let op_ = op("deleteFaults", "Delete every fault rule")
        .params([tid])
        .answer(204, None)
        .errors(READ, e);
    b.operation(&faults, "delete", op_.build());
    let op_ = op("getFault", "One fault rule")
        .params([tid, rid])
        .answer(200, Some(rule))
        .errors(READ, e);
    b.operation(&fault, "get", op_.build());
    let op_ = op("deleteFault", "Delete one fault rule")
        .params([tid, rid])
        .answer(204, None)
        .errors(READ, e);
    b.operation(&fault, "delete", op_.build());

    let requests = format!("{tenant}/requests");
    let q = |name: &str, description: Option<&str>| param(name, "query", string(), description);
    let [page_number, page_size] = paging();
    let params = [
        tid.clone(),
        q("method", None),
        q("path", Some("Glob over the path")),
        q("status", Some("A status (503) or a class (5xx)")),
        q("from", Some("Date or date-time, inclusive")),
        q("to", Some("Date or date-time, exclusive")),
        page_number,
        page_size,
    ];
    let entries = array(b.schema::<Entry>());
    let op_ = op("listRequests", "The tenant's request journal, newest first")
        .params(&params)
        .answer(200, Some(entries))
        .headers(200, counts())
        .errors(&[400, 401, 404, 503], e);
    b.operation(&requests, "get", op_.build());
    let op_ = op("clearRequests", "Clear the tenant's request journal")
        .params([tid])
        .answer(204, None)
        .errors(READ, e);
    b.operation(&requests, "delete", op_.build());
}
