//! The route table of Surface A: every endpoint once, with what the WADL says about it and
//! the handler that serves it. The router and the WADL are both built from this table, so
//! they cannot drift apart.

use crate::commands;
use crate::entity;
use crate::entity::Entity;
use crate::request::{BasicAuth, Eid, OptionalXmlBody, Query};
use crate::xml_schema::{Body, Shape};
use crate::{accounts, categories, invoices, notes, payments, readonly, users, CREATE_RESPONSE};
use axum::routing::{on, MethodFilter};
use shared::domain::accounts::StatusCommand;
use shared::query::{FieldKind, FieldSpec};

/// An HTTP method of the table and a row's handler (bound to the row's method): the route
/// tables' own, shared with Surfaces B and C.
pub use shared::web::routes::{Handler, Verb};

/// One endpoint.
pub struct Route {
    /// The method.
    pub verb: Verb,
    /// Path below the Surface A root, e.g. `billingAccounts/{eid}`.
    pub path: &'static str,
    /// One line on what it does.
    pub doc: &'static str,
    /// For a collection GET: the query keys it takes besides the paging keys.
    pub lists: Option<QueryKeys>,
    /// Query keys of [`Route::lists`] the path sets (`billingAccounts/{eid}/notes` sets
    /// `billingAccountEid`): not taken from the query, so not described.
    pub path_keys: &'static [&'static str],
    /// What the request body carries, when it takes one.
    pub request: Option<Body>,
    /// Whether the request body may be left out.
    pub request_optional: bool,
    /// What a successful answer carries.
    pub response: Body,
    /// The handler, bound to the route's method.
    pub handler: Handler,
}

/// The query keys of a collection GET.
#[derive(Clone, Copy)]
pub enum QueryKeys {
    /// An entity's keys (each the Surface A spelling of a named filter of its records).
    Of(&'static Entity),
    /// Keys a handler matches itself (`users`), declared by name and kind.
    Own(&'static [FieldSpec]),
}

impl QueryKeys {
    /// Each key's name and the kind of its values, in declaration order.
    pub fn keys(self) -> Vec<(&'static str, FieldKind)> {
        match self {
            QueryKeys::Of(entity) => entity.filters().map(|(n, f)| (n, f.kind)).collect(),
            QueryKeys::Own(specs) => specs.iter().map(|f| (f.name, f.kind)).collect(),
        }
    }
}

/// `GET <collection>` of an entity (a macro, because a handler cannot capture the entity).
macro_rules! query {
    ($entity:path, $path:literal) => {
        Route {
            verb: Verb::Get,
            path: $path,
            doc: "One page of the collection; query keys narrow it.",
            lists: Some(QueryKeys::Of(&$entity)),
            path_keys: &[],
            request: None,
            request_optional: false,
            response: Body::Page(&$entity),
            handler: |m| on(m, |a: BasicAuth, q: Query| entity::list(&$entity, a, q)),
        }
    };
}

/// `GET <collection>/{eid}` of an entity.
macro_rules! read_one {
    ($entity:path, $path:literal) => {
        Route {
            verb: Verb::Get,
            path: $path,
            doc: "One object by eid.",
            lists: None,
            path_keys: &[],
            request: None,
            request_optional: false,
            response: Body::Entity(&$entity),
            handler: |m| on(m, |a: BasicAuth, e: Eid| entity::get(&$entity, a, e)),
        }
    };
}

/// `POST billingAccounts/{eid}/<command>` for a status command.
macro_rules! status_command {
    ($command:expr, $path:literal, $doc:literal) => {
        Route {
            verb: Verb::Post,
            path: $path,
            doc: $doc,
            lists: None,
            path_keys: &[],
            request: Some(Body::Message(commands::status_request($command))),
            request_optional: true,
            response: Body::Message(&commands::COMMAND_RESPONSE),
            handler: |m| {
                on(m, |a: BasicAuth, e: Eid, b: OptionalXmlBody| {
                    commands::change_account_status($command, a, e, b)
                })
            },
        }
    };
}

fn write(
    verb: Verb,
    path: &'static str,
    doc: &'static str,
    request: Body,
    response: Body,
    handler: Handler,
) -> Route {
    Route {
        verb,
        path,
        doc,
        lists: None,
        path_keys: &[],
        request: Some(request),
        request_optional: false,
        response,
        handler,
    }
}

impl Route {
    /// The HTTP status of a successful answer: 201 for a create, else 200.
    pub fn success_status(&self) -> u16 {
        if self.response.element() == CREATE_RESPONSE.element {
            201
        } else {
            200
        }
    }

    /// The axum method filter of this route's verb.
    pub fn verb_filter(&self) -> MethodFilter {
        self.verb.filter()
    }
}

/// Every endpoint of Surface A except the WADL itself.
pub fn table() -> Vec<Route> {
    use Verb::{Post, Put};
    const ACCOUNT: Body = Body::Entity(&accounts::ENTITY);
    const CREATED: Body = Body::Message(&CREATE_RESPONSE);
    const COMMAND: Body = Body::Message(&commands::COMMAND_RESPONSE);
    const fn msg(shape: &'static Shape) -> Body {
        Body::Message(shape)
    }
    vec![
        query!(accounts::ENTITY, "billingAccounts"),
        write(Post, "billingAccounts", "Creates a billing account; answers its eid.", ACCOUNT, CREATED, |m| on(m, accounts::create)),
        read_one!(accounts::ENTITY, "billingAccounts/{eid}"),
        write(Put, "billingAccounts/{eid}", "Edits a billing account; answers it.", ACCOUNT, ACCOUNT, |m| on(m, accounts::edit)),
        write(Post, "billingAccounts/{eid}/applyPayment", "Applies a payment to the listed invoices, or to the account's open invoices oldest first.", msg(&commands::APPLY_PAYMENT), msg(&commands::APPLY_PAYMENT_RESPONSE), |m| on(m, commands::apply_to_account)),
        write(Post, "billingAccounts/{eid}/addAdjustment", "Adds a CREDIT adjustment, applied to the named open invoice as far as it needs.", msg(&commands::ADD_ADJUSTMENT), COMMAND, |m| on(m, commands::add_adjustment)),
        status_command!(StatusCommand::Suspend, "billingAccounts/{eid}/suspend", "ACTIVE or COLLECTION -> SUSPENDED."),
        status_command!(StatusCommand::Resume, "billingAccounts/{eid}/resume", "SUSPENDED or COLLECTION -> ACTIVE."),
        status_command!(StatusCommand::Deactivate, "billingAccounts/{eid}/deactivate", "ACTIVE, SUSPENDED, PENDING or COLLECTION -> DEACTIVATED."),
        write(Post, "billingAccounts/{eid}/addNote", "Keeps a dated note on the account; answers the note.", msg(&commands::ADD_NOTE), COMMAND, |m| on(m, commands::add_note)),
        Route {
            verb: Verb::Get,
            path: "billingAccounts/{eid}/notes",
            doc: "One page of the account's notes, oldest first.",
            lists: Some(QueryKeys::Of(&notes::ENTITY)),
            path_keys: &["billingAccountEid"],
            request: None,
            request_optional: false,
            response: Body::Page(&notes::ENTITY),
            handler: |m| on(m, notes::of_account),
        },
        Route {
            request_optional: true,
            ..write(Post, "billingAccounts/{eid}/billOnDemand", "Invoices the account's pending charges now (an OPEN ON_DEMAND invoice); pending charges drop to zero.", msg(&commands::BILL_ON_DEMAND), COMMAND, |m| on(m, commands::bill_on_demand))
        },
        write(Post, "billingAccounts/{eid}/moveToBillCycle", "Moves the account to another bill cycle; its next invoice date becomes the cycle's next billing day.", msg(&commands::MOVE_TO_BILL_CYCLE), COMMAND, |m| on(m, commands::move_to_bill_cycle)),
        query!(notes::ENTITY, "notes"),
        read_one!(notes::ENTITY, "notes/{eid}"),
        query!(categories::ENTITY, "billingAccountCategories"),
        write(Post, "billingAccountCategories", "Creates a billing account category; answers its eid.", Body::Entity(&categories::ENTITY), CREATED, |m| on(m, categories::create)),
        read_one!(categories::ENTITY, "billingAccountCategories/{eid}"),
        write(Put, "billingAccountCategories/{eid}", "Edits a billing account category; answers it.", Body::Entity(&categories::ENTITY), Body::Entity(&categories::ENTITY), |m| on(m, categories::edit)),
        query!(invoices::ENTITY, "invoices"),
        write(Post, "invoices", "Creates an invoice; answers its eid.", Body::Entity(&invoices::ENTITY), CREATED, |m| on(m, invoices::create)),
        read_one!(invoices::ENTITY, "invoices/{eid}"),
        write(Put, "invoices/{eid}", "Edits an invoice's description, dueDate, externalInvoiceNum; answers it.", Body::Entity(&invoices::ENTITY), Body::Entity(&invoices::ENTITY), |m| on(m, invoices::edit)),
        Route {
            verb: Verb::Get,
            path: "invoices/{eid}/lines",
            doc: "One page of the invoice's lines, in line order; their amounts add up to the invoice's amount.",
            lists: Some(QueryKeys::Of(&invoices::LINES)),
            path_keys: &["invoiceEid"],
            request: None,
            request_optional: false,
            response: Body::Page(&invoices::LINES),
            handler: |m| on(m, invoices::lines),
        },
        write(Post, "invoices/{eid}/applyPayment", "Applies a payment (recorded or new) to this invoice.", msg(&commands::APPLY_PAYMENT), msg(&commands::APPLY_PAYMENT_RESPONSE), |m| on(m, commands::apply_to_invoice)),
        Route {
            request_optional: true,
            ..write(Post, "invoices/{eid}/cancel", "OPEN or PROCESSING -> CANCELED when nothing was applied to it; its amount to pay leaves the balance.", msg(&commands::CANCEL), COMMAND, |m| on(m, commands::cancel))
        },
        query!(payments::ENTITY, "payments"),
        write(Post, "payments", "Records a payment, wholly unapplied; answers its eid.", Body::Entity(&payments::ENTITY), CREATED, |m| on(m, payments::create)),
        read_one!(payments::ENTITY, "payments/{eid}"),
        write(Put, "payments/{eid}", "Edits a payment's description and reference; answers it.", Body::Entity(&payments::ENTITY), Body::Entity(&payments::ENTITY), |m| on(m, payments::edit)),
        query!(readonly::AGREEMENTS, "agreements"),
        read_one!(readonly::AGREEMENTS, "agreements/{eid}"),
        query!(readonly::AGREEMENT_SERVICES, "agreementServices"),
        read_one!(readonly::AGREEMENT_SERVICES, "agreementServices/{eid}"),
        query!(readonly::PRODUCTS, "products"),
        read_one!(readonly::PRODUCTS, "products/{eid}"),
        query!(readonly::USAGE_EVENTS, "usageEvents"),
        read_one!(readonly::USAGE_EVENTS, "usageEvents/{eid}"),
        Route {
            verb: Verb::Get,
            path: "users",
            doc: "The tenant's users: the one its credentials name (eid 1).",
            lists: Some(QueryKeys::Own(users::FILTERS)),
            path_keys: &[],
            request: None,
            request_optional: false,
            response: msg(&users::USERS),
            handler: |m| on(m, users::list),
        },
        Route {
            verb: Verb::Get,
            path: "users/{eid}",
            doc: "The tenant's user by eid (1).",
            lists: None,
            path_keys: &[],
            request: None,
            request_optional: false,
            response: msg(&users::USER),
            handler: |m| on(m, users::one),
        },
        Route {
            verb: Verb::Get,
            path: "users/current",
            doc: "The user of the credentials.",
            lists: None,
            path_keys: &[],
            request: None,
            request_optional: false,
            response: msg(&users::USER),
            handler: |m| on(m, users::current),
        },
    ]
}
