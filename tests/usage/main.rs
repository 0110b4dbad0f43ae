//! Surface B usage events (`/billing/2/usage-events`) end to end: posting and rating, then
//! simulation and reading back.

mod formula;
mod nesting;
mod posting;
mod reading;
mod sell;
