//! The store's view of one S3 bucket (or an S3-compatible server) under a key prefix: its
//! settings ([`S3Config`]), the errors of its calls ([`S3Error`]), the per-thread deadline
//! ([`with_deadline`]) and [`Bucket`], the facade the store holds: an [`ObjectStore`] (the
//! AWS SDK in `aws.rs`, or the simulation's in-memory store in `memory.rs`) plus the
//! settings. Exactly the operations the replication protocol needs (see `replica`).
//!
//! Error contract (`object_store.rs` states it for every implementation): [`S3Error::Exists`]
//! only for a refused conditional write (HTTP 412 or 409), [`S3Error::NotFound`] only for a
//! missing key, [`S3Error::DeadlinePassed`] when the caller's [`with_deadline`] ran out,
//! [`S3Error::Refused`] for any other 4xx except throttling and timeouts (403, 400, ...), and
//! [`S3Error::Unavailable`] for everything else (network, timeouts, throttling, 5xx).
//! Neither of the last two says anything about whether a PUT took effect: a request
//! abandoned by a timeout may still reach S3 later. The write path settles that itself (see
//! `replica`, fencing); everywhere else `Unavailable` becomes `Error::Unavailable`.

pub use super::object_store::{Mutation, ObjectStore};
use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Timeout of one attempt of an S3 call, unless `SANDBOX_S3_ATTEMPT_TIMEOUT_MS` says
/// otherwise. The whole operation (the SDK's retries included) gets 2.5 times as long.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Total time a write may take (writer lock, catch-up, PUT and settling an unknown
/// outcome), unless `SANDBOX_S3_WRITE_DEADLINE_MS` says otherwise. Below API Gateway's
/// 29 s integration timeout, so that the client gets the store's answer, not a gateway's.
pub const DEFAULT_WRITE_DEADLINE: Duration = Duration::from_secs(20);
/// Log entries between snapshots, unless `SANDBOX_S3_COMPACT_EVERY` says otherwise.
pub const DEFAULT_COMPACT_EVERY: u64 = 100;

/// Where the S3 store lives and how it behaves: the store's own settings, which it never reads
/// from the environment itself (the config module builds them, `config::s3_from_env`); region
/// and credentials come from the standard AWS variables, which the SDK reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// Bucket name.
    pub bucket: String,
    /// Key prefix, empty or ending in `/`.
    pub prefix: String,
    /// Endpoint of an S3-compatible server (path-style addressing), `None` for AWS.
    pub endpoint: Option<String>,
    /// Log entries between snapshots (`SANDBOX_S3_COMPACT_EVERY`, default 100).
    pub compact_every: u64,
    /// Timeout of one attempt of an S3 call (`SANDBOX_S3_ATTEMPT_TIMEOUT_MS`, default 5 s).
    pub attempt_timeout: Duration,
    /// Total time one write may take (`SANDBOX_S3_WRITE_DEADLINE_MS`, default 20 s).
    pub write_deadline: Duration,
    /// Test hook (`SANDBOX_S3_CRASH_AT`): abort the process at this step of a write
    /// ([`CrashAt`]), to show what a crash there leaves behind. `None` in service.
    pub crash_at: Option<CrashAt>,
}

/// A step of an S3-mode write at which the test hook [`S3Config::crash_at`] aborts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashAt {
    /// Before the log entry's PUT.
    BeforePut,
    /// After the PUT succeeded, before the local commit.
    AfterPut,
}

impl CrashAt {
    /// `before-put` or `after-put`.
    pub fn parse(text: &str) -> Option<CrashAt> {
        match text.trim() {
            "before-put" => Some(CrashAt::BeforePut),
            "after-put" => Some(CrashAt::AfterPut),
            _ => None,
        }
    }
}

impl S3Config {
    /// A configuration with a normalized prefix (`a/b` and `/a/b/` both become `a/b/`).
    pub fn new(bucket: impl Into<String>, prefix: &str, endpoint: Option<String>) -> S3Config {
        let trimmed = prefix.trim_matches('/');
        S3Config {
            bucket: bucket.into(),
            prefix: if trimmed.is_empty() {
                String::new()
            } else {
                format!("{trimmed}/")
            },
            endpoint,
            compact_every: DEFAULT_COMPACT_EVERY,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            write_deadline: DEFAULT_WRITE_DEADLINE,
            crash_at: None,
        }
    }
}

/// Why an S3 call failed.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// A conditional create found the key already there (412/409): a lost race.
    #[error("object already exists")]
    Exists,
    /// The key does not exist.
    #[error("object not found")]
    NotFound,
    /// S3 could not be reached or refused the request.
    #[error("S3 unavailable: {0}")]
    Unavailable(String),
    /// S3 answered and refused the request for good (a 4xx such as 403 AccessDenied; not
    /// throttling, not a timeout): asking again soon will not help.
    #[error("S3 refused: {0}")]
    Refused(String),
    /// The thread's [`with_deadline`] passed before the call finished (or started).
    #[error("S3 call abandoned: the deadline passed")]
    DeadlinePassed,
}

impl From<S3Error> for crate::Error {
    fn from(e: S3Error) -> Self {
        crate::Error::Unavailable(e.to_string())
    }
}

/// A bucket and prefix: the object store and the store's settings. Cloning shares the store.
#[derive(Clone, Debug)]
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    config: S3Config,
}

thread_local! {
    /// The deadline of the block this thread runs under [`with_deadline`], if any.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `f` with every S3 call this thread makes inside it bounded by `deadline` (or by an
/// enclosing block's earlier deadline): a call still running then is abandoned and answers
/// [`S3Error::DeadlinePassed`]; a call started after it answers that at once, sending nothing.
pub fn with_deadline<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    let outer = DEADLINE.with(Cell::get);
    let bound = outer.map_or(deadline, |o| o.min(deadline));
    DEADLINE.with(|d| d.set(Some(bound)));
    // Restores the outer deadline even if `f` unwinds.
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0;
            DEADLINE.with(|d| d.set(outer));
        }
    }
    let _restore = Restore(outer);
    f()
}

/// The deadline of the block the calling thread runs under [`with_deadline`], if any.
pub(crate) fn current_deadline() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}

impl Bucket {
    /// Builds an S3 client for `config` (region and credentials from the standard AWS
    /// chain; `us-east-1` when no region is configured; HTTPS through rustls with ring).
    pub fn connect(config: S3Config) -> Result<Bucket, S3Error> {
        let store = super::aws::AwsStore::connect(&config)?;
        Ok(Bucket::on(Arc::new(store), config))
    }

    /// The bucket `store` stands for, with `config`'s settings (the in-memory store of the
    /// simulation, or any other [`ObjectStore`]).
    pub fn on(store: Arc<dyn ObjectStore>, config: S3Config) -> Bucket {
        Bucket { store, config }
    }

    /// Total time one write may take (see [`S3Config::write_deadline`]).
    pub fn write_deadline(&self) -> Duration {
        self.config.write_deadline
    }

    /// The test hook's crash step (see [`S3Config::crash_at`]).
    pub fn crash_at(&self) -> Option<CrashAt> {
        self.config.crash_at
    }

    /// The full key of `relative` under the configured prefix.
    pub fn key(&self, relative: &str) -> String {
        format!("{}{relative}", self.config.prefix)
    }

    /// The protocol's clock: real time, or the simulation's (see [`ObjectStore::now`]).
    pub fn now(&self) -> Instant {
        self.store.now()
    }

    /// Waits between two tries (see [`ObjectStore::pause`]).
    pub fn pause(&self, pause: Duration) {
        self.store.pause(pause);
    }

    /// The simulation's deliberately wrong step, if switched on (see [`ObjectStore::mutation`]).
    pub fn mutation(&self) -> Option<Mutation> {
        self.store.mutation()
    }

    /// [`Bucket::mutation`] in test builds, `None` in every build that serves.
    pub fn mutation_in_tests(&self) -> Option<Mutation> {
        if cfg!(test) {
            self.mutation()
        } else {
            None
        }
    }

    /// Creates `key` with `body` only if no object has that key (`If-None-Match: *`).
    pub fn put_if_absent(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        self.store.put_if_absent(key, body)
    }

    /// Uploads the file at `path` to `key`, replacing any object there.
    pub fn put_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        self.store.put_file(key, path)
    }

    /// The whole content of `key`.
    pub fn get(&self, key: &str) -> Result<Vec<u8>, S3Error> {
        self.store.get(key)
    }

    /// Streams `key` into a new file at `path`.
    pub fn get_to_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        self.store.get_to_file(key, path)
    }

    /// Keys under `prefix` that sort after `start_after`, ascending; at most `limit` of them.
    /// Keys in and out are relative to the configured prefix.
    pub fn list_after(
        &self,
        prefix: &str,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<String>, S3Error> {
        self.store.list_after(prefix, start_after, limit)
    }

    /// Deletes `key` (a missing key is not an error).
    pub fn delete(&self, key: &str) -> Result<(), S3Error> {
        self.store.delete(key)
    }

    /// Copies `from` to `to` inside the bucket (S3 copies the bytes itself), replacing any
    /// object at `to`. A missing source is [`S3Error::NotFound`].
    pub fn copy(&self, from: &str, to: &str) -> Result<(), S3Error> {
        self.store.copy(from, to)
    }
}
