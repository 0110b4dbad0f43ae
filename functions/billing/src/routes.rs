//! The route table of Surface B: every endpoint under `/billing/2` once, usage events
//! included, with the handler that serves it and what its OpenAPI document says of it. The
//! routers of both route groups ([`Group::Billing`], [`Group::Usage`]: two Lambdas) and the
//! document (`crate::openapi`) are built from this table, so they cannot drift apart.
//!
//! What a row says is what the code does: a list or a read names its resource (the list
//! source the handler pages through, whose named filters, defaults, `expand` names and
//! bounds the document lists), and the handler is bound to that same resource by the
//! [`collection!`] and [`list!`] macros. A write names the Rust types of its body and answer.
//! The error answers follow from the row (see `openapi::operations::errors`).
//!
//! To add an endpoint: add its handler, then one row here.

use crate::handlers::{self as h, Req, Scope};
use crate::openapi::{usage_example, DOCUMENT};
use crate::resources::{agreement_services, bill_batches, true_ups};
use crate::usage;
use axum::extract::Path;
use axum::routing::on;
use axum::Router;
use serde_json::Value;
use shared::domain::lists;
use shared::query::ListSource;
use shared::web::openapi::{Builder, Rendering};
use shared::web::routes::{mount, Handler, Verb};
use shared::web::{AppState, BILLING_PREFIX};

/// The route group (Lambda) that serves a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Queries and maintenance (`functions/billing`), and the documents.
    Billing,
    /// Usage events (`functions/usage`), their own Lambda.
    Usage,
}

impl Group {
    /// The tag of its operations in the document.
    pub fn tag(self) -> &'static str {
        match self {
            Group::Billing => "billing",
            Group::Usage => "usage",
        }
    }
}

pub use shared::web::openapi::Schema;

/// What a list or a read of a resource documents, taken from the resource the handler uses.
#[derive(Clone, Copy)]
pub struct Listed {
    /// The list source: its named filters are the list's query filters.
    pub source: &'static ListSource,
    /// The record's schema.
    pub item: Schema,
    /// Named-filter values assumed when the client names none (documented as the default).
    pub defaults: &'static [(&'static str, &'static str)],
    /// The sub-entity names `expand` takes (none: no `expand`).
    pub expand: &'static [&'static str],
    /// Named filters with a length bound (in characters), refused above it.
    pub max_chars: &'static [(&'static str, usize)],
}

/// A write: its body, its answer and whether it takes `Prefer`.
#[derive(Clone, Copy)]
pub struct Write {
    /// Status of a successful answer.
    pub status: u16,
    /// The request body's schema (required).
    pub body: Schema,
    /// An example body, when the row shows one.
    pub example: Option<fn() -> Value>,
    /// The answer's schema.
    pub answer: Schema,
    /// Whether it takes `Prefer: return=...` (the record writes do; usage posting does not).
    pub prefer: bool,
}

impl Write {
    /// A write of a record: no example, takes `Prefer`.
    const fn record(status: u16, body: Schema, answer: Schema) -> Write {
        Write {
            status,
            body,
            example: None,
            answer,
            prefer: true,
        }
    }
}

/// What the document says of a row.
#[derive(Clone, Copy)]
pub enum Doc {
    /// The document itself, in one of its renderings (no credentials).
    Document(Rendering),
    /// One page of a resource.
    List {
        /// Operation id.
        id: &'static str,
        /// Summary.
        summary: &'static str,
        /// The resource.
        listed: Listed,
    },
    /// One record of a resource, by its id (the path's last parameter).
    Read {
        /// Operation id.
        id: &'static str,
        /// Summary.
        summary: &'static str,
        /// The resource.
        listed: Listed,
    },
    /// A write answering a record.
    Write {
        /// Operation id.
        id: &'static str,
        /// Summary.
        summary: &'static str,
        /// Body and answer.
        write: Write,
    },
    /// A delete answering 204 without a body.
    Delete {
        /// Operation id.
        id: &'static str,
        /// Summary.
        summary: &'static str,
    },
}

/// One endpoint.
pub struct Route {
    /// The method.
    pub verb: Verb,
    /// Path below `/billing/2`, e.g. `/actions/{id}`.
    pub path: &'static str,
    /// Which Lambda serves it.
    pub group: Group,
    /// What the document says of it.
    pub doc: Doc,
    /// The handler, bound to the row's method.
    pub handler: Handler,
}

/// `GET <path>` (one page) and `GET <path>/{id}` (one record) of a resource of the billing
/// group; with a parent, the path's first parameter is the parent's id (404 unless it
/// exists) and both are narrowed to its children.
macro_rules! collection {
    ($resource:expr, $path:literal, $list:literal, $list_summary:literal, $one:literal, $one_summary:literal) => {
        [
            list!($resource, $path, $list, $list_summary),
            Route {
                verb: Verb::Get,
                path: concat!($path, "/{id}"),
                group: Group::Billing,
                doc: Doc::Read {
                    id: $one,
                    summary: $one_summary,
                    listed: h::listed(&$resource),
                },
                handler: |m| {
                    on(m, |r: Req, Path(id): Path<String>| async move {
                        r.one($resource, &id, Scope::none()).await
                    })
                },
            },
        ]
    };
    ($resource:expr, $parent:expr, $path:literal, $list:literal, $list_summary:literal, $one:literal, $one_summary:literal) => {
        [
            list!($resource, $parent, $path, $list, $list_summary),
            Route {
                verb: Verb::Get,
                path: concat!($path, "/{id}"),
                group: Group::Billing,
                doc: Doc::Read {
                    id: $one,
                    summary: $one_summary,
                    listed: h::listed(&$resource),
                },
                handler: |m| {
                    on(
                        m,
                        |r: Req, Path((parent, id)): Path<(String, String)>| async move {
                            r.one($resource, &id, Scope::child_of($parent, &parent)?)
                                .await
                        },
                    )
                },
            },
        ]
    };
}

/// `GET <path>`: one page of a resource of the billing group (of a parent's children when
/// a parent is named: the path's one parameter is its id).
macro_rules! list {
    ($resource:expr, $path:literal, $id:literal, $summary:literal) => {
        Route {
            verb: Verb::Get,
            path: $path,
            group: Group::Billing,
            doc: Doc::List {
                id: $id,
                summary: $summary,
                listed: h::listed(&$resource),
            },
            handler: |m| on(m, |r: Req| r.list($resource, Scope::none())),
        }
    };
    ($resource:expr, $parent:expr, $path:literal, $id:literal, $summary:literal) => {
        Route {
            verb: Verb::Get,
            path: $path,
            group: Group::Billing,
            doc: Doc::List {
                id: $id,
                summary: $summary,
                listed: h::listed(&$resource),
            },
            handler: |m| {
                on(m, |r: Req, Path(parent): Path<String>| async move {
                    r.list($resource, Scope::child_of($parent, &parent)?).await
                })
            },
        }
    };
}

/// The usage event list and reads (the domain's list source, `usage::EVENT_LIST`).
fn usage_events() -> Listed {
    Listed {
        source: &shared::domain::usage::EVENT_LIST,
        item: Builder::schema::<shared::domain::usage::RatedEvent>,
        defaults: &[],
        expand: &[],
        max_chars: &[],
    }
}

/// A write of the billing group, named by (operation id, summary).
fn record_write(
    verb: Verb,
    path: &'static str,
    (id, summary): (&'static str, &'static str),
    write: Write,
    handler: Handler,
) -> Route {
    Route {
        verb,
        path,
        group: Group::Billing,
        doc: Doc::Write { id, summary, write },
        handler,
    }
}

/// `POST <path>` of usage events (posting or simulating): a bulk request in, `answer` out.
fn usage_post(
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    answer: Schema,
    handler: Handler,
) -> Route {
    Route {
        verb: Verb::Post,
        path,
        group: Group::Usage,
        doc: Doc::Write {
            id,
            summary,
            write: Write {
                status: 200,
                body: Builder::schema::<shared::domain::usage::BulkRequest>,
                example: Some(usage_example),
                answer,
                prefer: false,
            },
        },
        handler,
    }
}

/// Every endpoint of Surface B.
pub fn table() -> Vec<Route> {
    use Verb::{Delete, Get, Post, Put};
    let document = |rendering: Rendering, handler: Handler| Route {
        verb: Get,
        path: match rendering {
            Rendering::V31 => "/openapi.json",
            Rendering::V30 => "/openapi-3.0.json",
        },
        group: Group::Billing,
        doc: Doc::Document(rendering),
        handler,
    };
    let mut rows = vec![
        document(Rendering::V31, |m| {
            on(m, || async { DOCUMENT.answer_of(Rendering::V31) })
        }),
        document(Rendering::V30, |m| {
            on(m, || async { DOCUMENT.answer_of(Rendering::V30) })
        }),
    ];
    rows.extend(collection!(
        lists::actions::LIST,
        "/actions",
        "listActions",
        "Actions",
        "getAction",
        "One action"
    ));
    rows.extend(collection!(
        lists::actions::LIST,
        lists::actions::BY_BILL_CYCLE,
        "/bill-cycles/{bill_cycle_id}/actions",
        "listBillCycleActions",
        "Actions of a bill cycle",
        "getBillCycleAction",
        "One action of a bill cycle"
    ));
    rows.extend(collection!(
        lists::adjustment_applications::LIST,
        "/adjustment-applications",
        "listAdjustmentApplications",
        "Adjustment applications",
        "getAdjustmentApplication",
        "One adjustment application"
    ));
    rows.extend(collection!(
        lists::adjustment_categories::LIST,
        "/adjustment-categories",
        "listAdjustmentCategories",
        "Adjustment categories",
        "getAdjustmentCategory",
        "One adjustment category"
    ));
    rows.extend(collection!(
        lists::agreements::LIST,
        "/agreements",
        "listAgreements",
        "Agreements",
        "getAgreement",
        "One agreement"
    ));
    rows.extend(collection!(
        lists::agreement_services::LIST,
        "/agreement-services",
        "listAgreementServices",
        "Agreement services",
        "getAgreementService",
        "One agreement service"
    ));
    rows.push(record_write(
        Put,
        "/agreement-services/{id}",
        (
            "updateAgreementService",
            "Partial update of an agreement service",
        ),
        Write::record(
            200,
            Builder::schema::<agreement_services::Patch>,
            Builder::schema::<lists::agreement_services::AgreementService>,
        ),
        |m| on(m, h::update_agreement_service),
    ));
    rows.extend(collection!(
        lists::true_ups::LIST,
        lists::true_ups::BY_AGREEMENT_SERVICE,
        "/agreement-services/{agreement_service_id}/true-up-charge-type-relations",
        "listTrueUpRelations",
        "True-up charge type relations",
        "getTrueUpRelation",
        "One true-up charge type relation"
    ));
    rows.push(record_write(
        Post,
        "/agreement-services/{agreement_service_id}/true-up-charge-type-relations",
        (
            "createTrueUpRelation",
            "Create a true-up charge type relation",
        ),
        Write::record(
            201,
            Builder::schema::<true_ups::NewRelation>,
            Builder::schema::<lists::true_ups::Relation>,
        ),
        |m| on(m, h::create_true_up),
    ));
    rows.push(Route {
        verb: Delete,
        path: "/agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}",
        group: Group::Billing,
        doc: Doc::Delete {
            id: "deleteTrueUpRelation",
            summary: "Delete a relation",
        },
        handler: |m| on(m, h::delete_true_up),
    });
    rows.extend(collection!(
        lists::bill_batches::LIST,
        "/bill-batches",
        "listBillBatches",
        "Bill batches (status ACTIVE unless named)",
        "getBillBatch",
        "One bill batch"
    ));
    rows.push(record_write(
        Post,
        "/bill-batches",
        ("createBillBatch", "Create a bill batch (answers 200)"),
        Write::record(
            200,
            Builder::schema::<bill_batches::CreateBody>,
            Builder::schema::<lists::bill_batches::BillBatch>,
        ),
        |m| on(m, h::create_bill_batch),
    ));
    rows.push(list!(
        lists::bill_batches::ACCOUNTS_LIST,
        lists::bill_batches::BY_BILL_BATCH,
        "/bill-batches/{bill_batch_id}/billing-accounts",
        "listBillBatchAccounts",
        "Billing accounts of a bill batch"
    ));
    rows.extend([
        usage_post(
            "/usage-events/bulk",
            "postUsageEvents",
            "Rate and store 1..50 usage events",
            Builder::schema::<shared::domain::usage::BulkOutcome>,
            |m| on(m, usage::post_bulk),
        ),
        usage_post(
            "/usage-events/simulate/bulk",
            "simulateUsageEvents",
            "Rate 1..50 usage events without storing anything",
            crate::openapi::simulation,
            |m| on(m, usage::simulate_bulk),
        ),
        Route {
            verb: Get,
            path: "/usage-events",
            group: Group::Usage,
            doc: Doc::List {
                id: "listUsageEvents",
                summary: "Rated usage events (at least one narrowing parameter)",
                listed: usage_events(),
            },
            handler: |m| on(m, usage::list_events),
        },
        Route {
            verb: Get,
            path: "/usage-events/{id}",
            group: Group::Usage,
            doc: Doc::Read {
                id: "getUsageEvent",
                summary: "One rated usage event (voided or live)",
                listed: usage_events(),
            },
            handler: |m| on(m, usage::get_event),
        },
    ]);
    rows
}

/// The router of one route group: its rows of [`table`] under `/billing/2`.
pub fn group(group: Group) -> Router<AppState> {
    let rows = table()
        .into_iter()
        .filter(|r| r.group == group)
        .map(|r| (r.verb, r.path, r.handler));
    mount(&[BILLING_PREFIX], rows)
}
