//! The common crate of the billing sandbox: models, auth, errors, the tenant store and the
//! demo data set. Route groups (the crates under `functions/`) build their routers on top of
//! it; nothing here routes requests of any surface.
//!
//! Layers, from the bottom:
//! - [`store`]: one SQLite database per tenant plus the registry of tenants and credentials.
//! - [`domain`]: writes and reads of platform records that every surface shares.
//! - [`auth`]: credentials (hashed, compared in constant time) and HS256 JWTs.
//! - [`web`]: the axum glue every route group uses: app state, auth extractors, JSON errors.

pub mod auth;
pub mod config;
pub mod domain;
pub mod error;
pub mod money;
pub mod paging;
pub mod query;
pub mod seed;
pub mod store;
pub mod tenants;
pub mod time;
pub mod web;

pub use error::{Error, Result};
