//! The tenant store end to end: the S3-backed store against a real S3 server (moto), with
//! writers in threads, environments and OS processes, crashes and S3 faults. The moto
//! server and the fault proxy are `e2e::s3`; `powers`: the sandbox powers (clock, faults,
//! journal) across environments on one bucket; `idempotency`: a write whose outcome was unknown,
//! retried with its Idempotency-Key; `fixtures`: a fixture document applied, checkpointed,
//! restored, forked and read by a cold environment; `open_race`: servers starting at once on
//! one data directory, from threads and from processes; `registry_schema`: a registry made
//! before the registry's schema had versions, opened and used; `stale_read`: a usage post after a
//! fixtures apply read at once through Surface A on every environment; `contract`: the
//! object-store contract, one set of cases run on the simulation's in-memory bucket and on S3
//! (moto) through the AWS client; `undo`: clock advances undone across environments.

mod cache;
mod chaos;
mod checkpoint_limits;
mod checkpoints;
mod contract;
mod costs;
mod deadlines;
mod fencing;
mod fixtures;
mod group_commit;
mod idempotency;
mod isolation;
mod lifecycle;
mod open_race;
mod powers;
mod registry_schema;
mod restore_load;
mod s3_sync;
mod stale_read;
mod undo;
