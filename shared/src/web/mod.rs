//! The HTTP glue every route group shares, and the only place in `shared` that knows axum.
//! A request walks one pipeline (see [`pipeline`] for its steps and order):
//!
//! - [`surface`]: what differs per surface (prefixes, credentials, error shape, paging);
//! - [`state`]: [`AppState`] and the one place a credential becomes a tenant;
//! - [`pipeline`]: path bounds, identification, admission, body read, timeout, request log;
//! - [`idempotency`]: the `Idempotency-Key` header of writes (replays, in-flight refusals);
//! - [`powers`]: the sandbox powers (fault rules, journal) applied to identified requests;
//! - [`extract`]: extractors (identified tenant, JSON body, query map) and their bounds;
//! - [`error`]: the `{code, message}` error and the mapping of domain errors to it;
//! - [`router`]: finishing a route group's router (fallbacks, layers, trailing slash);
//! - [`listing`]: the HTTP side of lists (paging conventions, Surface B's filter/sort);
//! - [`openapi`]: assembling, rendering and serving the OpenAPI documents built in code;
//! - [`routes`]: route tables, from which a surface's router and document are both built.

pub mod error;
pub mod extract;
pub mod idempotency;
pub mod listing;
pub mod openapi;
pub mod pipeline;
pub mod powers;
pub mod router;
pub mod routes;
pub mod state;
pub mod surface;

pub use error::ApiError;
pub use extract::{
    identified_admin, identified_tenant, parse_json, parse_query, BillingAuth, JsonBody, Params,
    MAX_JSON_DEPTH, MAX_QUERY_NAME_CHARS, MAX_QUERY_PARAMS, MAX_QUERY_VALUE_CHARS,
};
pub use router::{finish, init_tracing};
pub use state::{AppState, Identity, Tenant};
pub use surface::{
    header_str, Credential, Surface, ADMIN_PREFIX, BILLING_AUTH_MESSAGE, BILLING_PREFIX,
    LEGACY_PREFIX, REVENUE_ALIAS_PREFIX, REVENUE_PREFIX, REVENUE_PREFIXES,
};
