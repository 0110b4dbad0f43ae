//! Surface A (`/t/s/r/1.28`, XML) end to end: one test binary, one module per concern. The
//! XML client and readers are `e2e::legacy`.

mod account_num;
mod api;
mod bounds;
mod command_clock;
mod commands;
mod commands_more;
mod cross_surface;
mod generated;
mod grammar;
mod roundtrip;
mod safety;
mod text_rule;
mod wadl;
mod wadl_paging;
