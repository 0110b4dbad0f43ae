//! The route table of the admin API: every endpoint under `/sandbox/v1` once, with the
//! handler that serves it, what its OpenAPI document says of it and whether the write keeps
//! its Idempotency-Key. The router ([`router`]) and the document (`crate::openapi`) are built
//! from this table, so neither can name an endpoint the other lacks. The web console
//! (`crate::console`) is not in the table: it serves static files, not operations of the API.
//!
//! Invariants: a (method, path) pair appears once; a path parameter is one the document
//! knows (`crate::openapi::path_param`); `keyed` is set only on writes whose key is stored
//! with the write (the tenant's database or the registry), see docs/storage.md.
//!
//! To add an endpoint: add its handler, then one row here, and rewrite the committed
//! documents with `OPENAPI_WRITE=1`.

use crate::fixtures::Applied;
use crate::openapi::DOCUMENT;
use crate::powers::AdvanceClock;
use crate::{
    CreateCheckpoint, CreateTenant, CreatedTenant, ResetDone, ResetRequest, RestoreRequest,
    Restored, TenantDryRun, Token, TokenRequest,
};
use axum::routing::on;
use axum::Router;
use serde_json::{json, Value};
use shared::domain::policy::{BillingPolicy, PolicyChange};
use shared::sandbox::clock::{Advanced, ClockView, Setting};
use shared::sandbox::faults::{NewRule, Rule};
use shared::sandbox::journal::Entry;
use shared::sandbox::undo::Undone;
use shared::store::checkpoints::Checkpoint;
use shared::store::TenantRecord;
use shared::web::openapi::{array, string, Builder, Rendering};
use shared::web::routes::{mount, Handler, Verb};
use shared::web::{AppState, ADMIN_PREFIX};

pub use shared::web::openapi::Schema;

/// A query parameter of an operation.
#[derive(Clone, Copy)]
pub struct Query {
    /// Its name.
    pub name: &'static str,
    /// Its schema.
    pub schema: fn() -> Value,
    /// What it does, when the name does not say.
    pub description: Option<&'static str>,
}

/// `dry_run` of the writes that rehearse (`crate::dry_run` reads it).
pub const DRY_RUN: &[Query] = &[Query {
    name: "dry_run",
    schema: || json!({ "type": "boolean", "default": false }),
    description: Some("true: validate and answer what would be written (200), changing nothing"),
}];

/// The journal's filters (`powers::journal_filter` reads them).
pub const JOURNAL_FILTERS: &[Query] = &[
    Query {
        name: "method",
        schema: string,
        description: None,
    },
    Query {
        name: "path",
        schema: string,
        description: Some("Glob over the path"),
    },
    Query {
        name: "status",
        schema: string,
        description: Some("A status (503) or a class (5xx)"),
    },
    Query {
        name: "from",
        schema: string,
        description: Some("Date or date-time, inclusive"),
    },
    Query {
        name: "to",
        schema: string,
        description: Some("Date or date-time, exclusive"),
    },
];

/// A request body: its schema and whether it is required.
#[derive(Clone, Copy)]
pub struct Body {
    /// The schema.
    pub schema: Schema,
    /// Whether a request must carry it (`issueToken`'s is optional).
    pub required: bool,
}

/// What the document says of an operation.
#[derive(Clone, Copy)]
pub struct Op {
    /// Operation id.
    pub id: &'static str,
    /// Summary.
    pub summary: &'static str,
    /// Its query parameters (the path's are read off the path), before the paging ones.
    pub query: &'static [Query],
    /// Its request body.
    pub body: Option<Body>,
    /// Status of a successful answer.
    pub status: u16,
    /// The answer's schema (a page's item when `paged`); none: an empty body.
    pub answer: Option<Schema>,
    /// The answer of a dry run (200) when it differs from the write's.
    pub rehearsal: Option<Schema>,
    /// Whether it answers one page of a list (`powers::JOURNAL_PAGING`: its parameters and
    /// count headers).
    pub paged: bool,
    /// Its error answers.
    pub errors: &'static [u16],
    /// Whether the write keeps its Idempotency-Key with what it writes, so that a retry is
    /// replayed; the document promises the header on these writes only. The other writes
    /// (tokens, journal clear, checkpoint deletion) accept the header but run again.
    pub keyed: bool,
}

/// What the document says of a row.
#[derive(Clone, Copy)]
pub enum Doc {
    /// The document itself, in one of its renderings (no credentials).
    Document(Rendering),
    /// A JSON document served without credentials, tagged `meta` (the fixtures' schema).
    Meta {
        /// Operation id.
        id: &'static str,
        /// Summary.
        summary: &'static str,
        /// What the answer is.
        answer: &'static str,
    },
    /// An operation, guarded by `X-Admin-Key`.
    Op(Op),
}

/// One endpoint of the admin API.
pub type Route = shared::web::routes::Route<Doc>;

/// The errors of a read inside a tenant.
pub const READ: &[u16] = &[401, 404, 503];
/// The errors of a write with a JSON body inside a tenant.
pub const WRITE: &[u16] = &[400, 401, 404, 413, 415, 503];
/// The errors of a write with a JSON body that may meet a name in use.
pub const CREATE: &[u16] = &[400, 401, 404, 409, 413, 415, 503];

/// An operation answering 200 with an empty body, without parameters or body, erring as a
/// read does, not keyed.
const fn op(id: &'static str, summary: &'static str) -> Op {
    Op {
        id,
        summary,
        query: &[],
        body: None,
        status: 200,
        answer: None,
        rehearsal: None,
        paged: false,
        errors: READ,
        keyed: false,
    }
}

fn row(verb: Verb, path: &'static str, handler: Handler, op: Op) -> Route {
    Route {
        verb,
        path,
        doc: Doc::Op(op),
        handler,
    }
}

const fn body(schema: Schema) -> Option<Body> {
    Some(Body {
        schema,
        required: true,
    })
}

/// Every endpoint of the admin API.
pub fn table() -> Vec<Route> {
    use crate::{fixtures as fx, policy as pol, powers as pw};
    use Verb::{Delete, Get, Post, Put};
    let tenant: Schema = Builder::schema::<TenantRecord>;
    let checkpoint: Schema = Builder::schema::<Checkpoint>;
    let clock: Schema = Builder::schema::<ClockView>;
    let rule: Schema = Builder::schema::<Rule>;
    let policy: Schema = Builder::schema::<BillingPolicy>;
    let fixture_document: Schema = |_| json!({ "type": "object", "additionalProperties": true, "description": "A fixture document" });
    vec![
        Route {
            verb: Get,
            path: "/openapi.json",
            doc: Doc::Document(Rendering::V31),
            handler: |m| on(m, || async { DOCUMENT.answer_of(Rendering::V31) }),
        },
        Route {
            verb: Get,
            path: "/openapi-3.0.json",
            doc: Doc::Document(Rendering::V30),
            handler: |m| on(m, || async { DOCUMENT.answer_of(Rendering::V30) }),
        },
        Route {
            verb: Get,
            path: "/fixtures.schema.json",
            doc: Doc::Meta {
                id: "fixturesSchema",
                summary: "The JSON Schema of a fixture document (docs/fixtures.md), derived from the types the loader reads",
                answer: "The schema",
            },
            handler: |m| on(m, fx::fixtures_schema),
        },
        // Tenants.
        row(
            Post,
            "/tenants",
            |m| on(m, crate::create_tenant),
            Op {
                query: DRY_RUN,
                body: body(Builder::schema::<CreateTenant>),
                status: 201,
                answer: Some(Builder::schema::<CreatedTenant>),
                rehearsal: Some(Builder::schema::<TenantDryRun>),
                errors: CREATE,
                keyed: true,
                ..op(
                    "createTenant",
                    "Create a tenant with credentials (or fork one); with dry_run=true, validate the seed or fixtures and answer what would be created, registering nothing",
                )
            },
        ),
        row(
            Get,
            "/tenants",
            |m| on(m, crate::list_tenants),
            Op {
                answer: Some(tenant),
                paged: true,
                errors: &[400, 401, 503],
                ..op("listTenants", "A page of the tenants, oldest first")
            },
        ),
        row(
            Get,
            "/tenants/{id}",
            |m| on(m, crate::get_tenant),
            Op {
                answer: Some(tenant),
                ..op("getTenant", "One tenant")
            },
        ),
        row(
            Delete,
            "/tenants/{id}",
            |m| on(m, crate::delete_tenant),
            Op {
                status: 204,
                keyed: true,
                ..op("deleteTenant", "Delete a tenant and its data")
            },
        ),
        row(
            Post,
            "/tenants/{id}/tokens",
            |m| on(m, crate::issue_token),
            Op {
                body: Some(Body {
                    schema: Builder::schema::<TokenRequest>,
                    required: false,
                }),
                status: 201,
                answer: Some(Builder::schema::<Token>),
                // The body is read as bytes (empty: the default lifetime), so no 415.
                errors: &[400, 401, 404, 413, 503],
                ..op("issueToken", "Issue a bearer JWT for Surface B")
            },
        ),
        row(
            Post,
            "/tenants/{id}/reset",
            |m| on(m, crate::reset_tenant),
            Op {
                body: body(Builder::schema::<ResetRequest>),
                answer: Some(Builder::schema::<ResetDone>),
                errors: WRITE,
                keyed: true,
                ..op("resetTenant", "Reset a tenant's data to a seed")
            },
        ),
        // Fixtures.
        row(
            Get,
            "/tenants/{id}/fixtures",
            |m| on(m, fx::export_fixtures),
            Op {
                answer: Some(|_| json!({ "type": "object", "description": "A fixture document" })),
                errors: &[401, 404, 422, 503],
                ..op(
                    "exportFixtures",
                    "The tenant's data as a fixture document (docs/fixtures.md): ids included, absolute dates, records in id order",
                )
            },
        ),
        row(
            Post,
            "/tenants/{id}/fixtures",
            |m| on(m, fx::apply_fixtures),
            Op {
                query: DRY_RUN,
                body: body(fixture_document),
                answer: Some(Builder::schema::<Applied>),
                errors: WRITE,
                keyed: true,
                ..op(
                    "applyFixtures",
                    "Apply a fixture document (docs/fixtures.md) to the tenant in one write, all or nothing; records whose id exists are updated in place, the others created, nothing deleted; a refusal names the JSON path of its first problem; with dry_run=true, validate and answer what would be created and updated, changing nothing",
                )
            },
        ),
        // Checkpoints, restore (forks are `POST /tenants` with `from`).
        row(
            Post,
            "/tenants/{id}/checkpoints",
            |m| on(m, crate::create_checkpoint),
            Op {
                body: body(Builder::schema::<CreateCheckpoint>),
                status: 201,
                answer: Some(checkpoint),
                errors: CREATE,
                keyed: true,
                ..op("createCheckpoint", "Checkpoint the tenant's current data")
            },
        ),
        row(
            Get,
            "/tenants/{id}/checkpoints",
            |m| on(m, crate::list_checkpoints),
            Op {
                answer: Some(|b| array(b.schema::<Checkpoint>())),
                ..op("listCheckpoints", "The tenant's checkpoints, oldest first")
            },
        ),
        row(
            Get,
            "/tenants/{id}/checkpoints/{name}",
            |m| on(m, crate::get_checkpoint),
            Op {
                answer: Some(checkpoint),
                errors: &[400, 401, 404, 503],
                ..op("getCheckpoint", "One checkpoint")
            },
        ),
        row(
            Delete,
            "/tenants/{id}/checkpoints/{name}",
            |m| on(m, crate::delete_checkpoint),
            Op {
                status: 204,
                errors: &[400, 401, 404, 503],
                ..op(
                    "deleteCheckpoint",
                    "Delete a checkpoint (restores and forks made from it keep their data)",
                )
            },
        ),
        row(
            Post,
            "/tenants/{id}/restore",
            |m| on(m, crate::restore_checkpoint),
            Op {
                body: body(Builder::schema::<RestoreRequest>),
                answer: Some(Builder::schema::<Restored>),
                errors: WRITE,
                keyed: true,
                ..op(
                    "restoreCheckpoint",
                    "Replace the tenant's data with a checkpoint's (credentials kept)",
                )
            },
        ),
        // The test clock.
        row(
            Get,
            "/tenants/{id}/clock",
            |m| on(m, pw::get_clock),
            Op {
                answer: Some(clock),
                ..op("getClock", "The tenant's test clock")
            },
        ),
        row(
            Put,
            "/tenants/{id}/clock",
            |m| on(m, pw::set_clock),
            Op {
                body: body(Builder::schema::<Setting>),
                answer: Some(clock),
                errors: WRITE,
                keyed: true,
                ..op(
                    "setClock",
                    "Freeze the clock at an instant, or return it to real time",
                )
            },
        ),
        row(
            Post,
            "/tenants/{id}/clock/advance",
            |m| on(m, pw::advance_clock),
            Op {
                body: body(Builder::schema::<AdvanceClock>),
                answer: Some(Builder::schema::<Advanced>),
                errors: WRITE,
                keyed: true,
                ..op(
                    "advanceClock",
                    "Move the clock forward, running the transitions due on the way",
                )
            },
        ),
        row(
            Post,
            "/tenants/{id}/clock/undo",
            |m| on(m, pw::undo_advance),
            Op {
                answer: Some(Builder::schema::<Undone>),
                errors: &[401, 404, 409, 503],
                keyed: true,
                ..op(
                    "undoClockAdvance",
                    "Undo the newest clock advance: restore the automatic checkpoint it kept (409 when none is kept)",
                )
            },
        ),
        // Fault rules.
        row(
            Post,
            "/tenants/{id}/faults",
            |m| on(m, pw::create_fault),
            Op {
                body: body(Builder::schema::<NewRule>),
                status: 201,
                answer: Some(rule),
                errors: WRITE,
                keyed: true,
                ..op("createFault", "Add a fault rule")
            },
        ),
        row(
            Get,
            "/tenants/{id}/faults",
            |m| on(m, pw::list_faults),
            Op {
                answer: Some(|b| array(b.schema::<Rule>())),
                ..op(
                    "listFaults",
                    "The tenant's fault rules, in the order they are tried",
                )
            },
        ),
        row(
            Delete,
            "/tenants/{id}/faults",
            |m| on(m, pw::delete_faults),
            Op {
                status: 204,
                keyed: true,
                ..op("deleteFaults", "Delete every fault rule")
            },
        ),
        row(
            Get,
            "/tenants/{id}/faults/{rule}",
            |m| on(m, pw::get_fault),
            Op {
                answer: Some(rule),
                ..op("getFault", "One fault rule")
            },
        ),
        row(
            Delete,
            "/tenants/{id}/faults/{rule}",
            |m| on(m, pw::delete_fault),
            Op {
                status: 204,
                keyed: true,
                ..op("deleteFault", "Delete one fault rule")
            },
        ),
        // The request journal.
        row(
            Get,
            "/tenants/{id}/requests",
            |m| on(m, pw::list_requests),
            Op {
                query: JOURNAL_FILTERS,
                answer: Some(Builder::schema::<Entry>),
                paged: true,
                errors: &[400, 401, 404, 503],
                ..op("listRequests", "The tenant's request journal, newest first")
            },
        ),
        row(
            Delete,
            "/tenants/{id}/requests",
            |m| on(m, pw::clear_requests),
            Op {
                status: 204,
                ..op("clearRequests", "Clear the tenant's request journal")
            },
        ),
        // The billing policy.
        row(
            Get,
            "/tenants/{id}/policy",
            |m| on(m, pol::get_policy),
            Op {
                answer: Some(policy),
                ..op(
                    "getPolicy",
                    "The tenant's billing policy (every member, defaults included)",
                )
            },
        ),
        row(
            Put,
            "/tenants/{id}/policy",
            |m| on(m, pol::set_policy),
            Op {
                body: body(Builder::schema::<PolicyChange>),
                answer: Some(policy),
                errors: WRITE,
                keyed: true,
                ..op(
                    "setPolicy",
                    "Change the tenant's billing policy: the members given are checked and set, the others kept; a refusal names the member and its allowed values and changes nothing",
                )
            },
        ),
    ]
}

/// The router of the table, every path under [`ADMIN_PREFIX`].
pub fn router() -> Router<AppState> {
    mount(
        &[ADMIN_PREFIX],
        table().into_iter().map(|r| (r.verb, r.path, r.handler)),
    )
}
