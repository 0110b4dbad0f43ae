//! The OpenAPI documents of Surface B, Surface C and the admin API: in step with the routers
//! and the generator, served without credentials (`documents`), and the servers conform to
//! them under schemathesis (`conformance`). Helpers: `e2e::openapi`.

mod conformance;
mod documents;
