//! The OpenAPI documents of Surface B, Surface C and the admin API: in step with the routers
//! and the code, served without credentials (`documents`), documenting every member a live
//! answer carries and the server's bounds (`members`), the servers conform to them under
//! schemathesis (`conformance`), and their OpenAPI 3.0.3 renderings are valid 3.0 and say the
//! same (`oas30`). Helpers: `e2e::openapi`.

mod conformance;
mod documents;
mod members;
mod oas30;
