//! Surface B queries and maintenance (`/billing/2` except usage events) end to end. The JSON
//! client bound to one tenant is `e2e::billing`.

mod autopay;
mod bounds;
mod endpoints;
mod lifecycle;
mod periods;
mod policy;
mod records;
mod roundtrip;
mod timing;
