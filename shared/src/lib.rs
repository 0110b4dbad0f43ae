//! The common crate of the billing sandbox: the domain, the paged-query engine, the tenant
//! store, auth, errors, the HTTP glue the surfaces share, and the demo data set. Route groups
//! (the crates under `functions/`) build their routers on top of it; nothing here routes
//! requests of any surface.
//!
//! Layers, from the bottom (docs/architecture.md, "Layers of `shared`", has the full table;
//! `shared/tests/layers.rs` fails on any reference that points up it):
//! - [`store`]: one SQLite database per tenant plus the registry of tenants and credentials,
//!   optionally synced to S3.
//! - [`query`]: Surface B's query language and the one paged-query engine every surface lists
//!   through (a selection, one page, the count); [`rating`]: the usage rating rules.
//! - [`domain`]: every rule of every surface, one module per business object (accounts,
//!   invoices, payments, adjustments, agreements, usage, ledgers, calendars, ...), taking
//!   typed inputs; no HTTP types.
//! - [`auth`]: credentials (hashed, compared in constant time) and HS256 JWTs.
//! - [`web`]: the axum glue every route group uses (app state, Surface B's auth extractor,
//!   JSON errors, the fallback for unknown routes) and [`web::listing`] (each surface's
//!   paging parameters and count headers, Surface B's list requests, ETags). The only module
//!   here that uses axum; surface-specific pieces live in the surface crates.
//!
//! Beside them: [`config`] (the composition root: every setting read from the environment
//! and handed to the part it configures), [`money`], [`time`] (with the reading of a
//! tenant's test clock), [`seed`] (the demo data, loaded through the domain), [`tenants`]
//! and [`names`] (the character rule of tenant and checkpoint names).

pub mod auth;
pub mod config;
pub mod domain;
pub mod error;
pub mod fixtures;
pub mod json_schema;
pub mod json_text;
pub mod money;
pub mod names;
pub mod query;
pub mod rating;
pub mod sandbox;
pub mod store;
pub mod tenants;
#[cfg(test)]
pub(crate) mod testing;
pub mod time;
pub mod web;

pub use error::{Error, Result};
