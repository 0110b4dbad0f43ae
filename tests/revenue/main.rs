//! Surface C (`/revenue/3`, also served at the platform's `/calypso/3`) end to end: both
//! base paths, ledgers and calendars, the revenue chain, and the chain fed by usage posted
//! over Surface B. The client bound to one tenant is `e2e::revenue`.

mod base_paths;
mod books;
mod bounds;
mod chain;
mod chargeinfo;
mod clock_runs;
mod collector_listing;
mod collector_names;
mod ids;
mod ledgers;
mod roundtrip;
mod usage_chain;
