//! The object store the replication protocol talks to: exactly the operations `replica`,
//! `checkpoints` and the journal use, behind a trait with two implementations, S3
//! (`aws.rs`, the AWS SDK) and an in-memory one (`memory.rs`) whose seeded scheduler
//! delays, reorders, drops and fails requests for the deterministic simulation
//! (docs/storage.md, "Simulation"). [`Bucket`](super::s3::Bucket) is the facade the store
//! holds: the trait object plus the store's settings.
//!
//! Contract (every implementation keeps it): keys are relative to the configured prefix;
//! [`S3Error::Exists`] only for a refused conditional create, [`S3Error::NotFound`] only for
//! a missing key, [`S3Error::DeadlinePassed`] when the calling thread's
//! [`with_deadline`](super::s3::with_deadline) ran out (before or during the call; a PUT
//! abandoned so may still land later), [`S3Error::Refused`] for a permanent refusal and
//! [`S3Error::Unavailable`] for everything else, which says nothing about whether a PUT
//! took effect. Time and pauses between retries go through the store too
//! ([`ObjectStore::now`], [`ObjectStore::pause`]), so that a simulated store runs the
//! protocol on simulated time.
//!
//! The end-to-end contract suite (tests/store/contract.rs, `cargo test -p e2e --test store
//! contract`) checks this contract with one set of cases run on both implementations: S3
//! through the AWS client against moto, and a plain in-memory bucket.

use super::s3::S3Error;
use std::path::Path;
use std::time::{Duration, Instant};

/// One bucket under one prefix, as the protocol uses it (see the module doc for the error
/// contract). Every call blocks the calling thread.
pub trait ObjectStore: Send + Sync + std::fmt::Debug {
    /// Creates `key` with `body` only if no object has that key (`If-None-Match: *`).
    fn put_if_absent(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error>;
    /// Uploads the file at `path` to `key`, replacing any object there.
    fn put_file(&self, key: &str, path: &Path) -> Result<(), S3Error>;
    /// The whole content of `key`.
    fn get(&self, key: &str) -> Result<Vec<u8>, S3Error>;
    /// Writes `key` into a new file at `path`.
    fn get_to_file(&self, key: &str, path: &Path) -> Result<(), S3Error>;
    /// Keys under `prefix` that sort after `start_after`, ascending; at most `limit`.
    fn list_after(
        &self,
        prefix: &str,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<String>, S3Error>;
    /// Deletes `key` (a missing key is not an error).
    fn delete(&self, key: &str) -> Result<(), S3Error>;
    /// Copies `from` to `to` inside the bucket, replacing any object at `to`; a missing
    /// source is [`S3Error::NotFound`], a copy onto itself (`from == to`) is
    /// [`S3Error::Refused`] as S3 refuses it (the protocol never makes one).
    fn copy(&self, from: &str, to: &str) -> Result<(), S3Error>;
    /// The protocol's clock (deadlines are instants of it): real time, or simulated time.
    fn now(&self) -> Instant {
        Instant::now()
    }
    /// Waits `pause` between two tries (a real sleep, or simulated time passing).
    fn pause(&self, pause: Duration) {
        std::thread::sleep(pause);
    }
    /// A deliberately wrong protocol step the simulation switches on to show that it is
    /// caught. Only the in-memory store answers anything but `None`, and the write path asks
    /// in test builds only (`cfg!(test)`): never in a build that serves.
    fn mutation(&self) -> Option<Mutation> {
        None
    }
}

/// A deliberately wrong protocol step (see [`ObjectStore::mutation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// A write whose fence lost to its own entry (the PUT did land) answers "nothing was
    /// applied" instead of success.
    NothingAppliedWhenFenceLost,
    /// A write whose PUT ended without an answer answers "nothing was applied" without
    /// fencing its slot (the PUT may have landed, or land later).
    SkipFence,
    /// Compaction also deletes the log entries its snapshot covers (as a log that is
    /// "truncated after a snapshot" would): an environment still behind the snapshot finds
    /// its next slot free, and its write (or read) goes to a history nobody else follows.
    PruneLog,
    /// A group of writes (several writes of one process sharing one log entry) is committed
    /// locally and answered before its PUT's outcome is known.
    AckGroupBeforePut,
    /// A group's entry leaves out the changes of its members after the first, which are
    /// still answered as applied.
    DropGroupMember,
    /// A write that lost a race runs again on its stale copy, without catching up: it loses
    /// every race after that and answers "nothing was applied" at its deadline. Safe, but
    /// no contended write ever lands (what only the simulation's liveness check catches).
    NoCatchUpAfterLostRace,
}
