//! The OpenAPI documents of Surface B, Surface C and the admin API: in step with the routers
//! and the code, served without credentials (`documents`), documenting every member a live
//! answer carries and the server's bounds (`members`), and the servers conform to them under
//! schemathesis (`conformance`). Helpers: `e2e::openapi`.

mod conformance;
mod documents;
mod members;
