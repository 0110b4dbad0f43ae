//! Configuration read from the environment (every variable is listed in docs/configuration.md). This is
//! the one place that reads the store's and the server's environment variables.

use crate::store::s3::CrashAt;
use crate::store::S3Config;
use std::path::PathBuf;

/// Process-wide settings shared by every route group.
#[derive(Clone)]
pub struct Config {
    /// Where tenant databases and the registry live (`SANDBOX_DATA_DIR`, default `./data`).
    pub data_dir: PathBuf,
    /// The admin API key (`SANDBOX_ADMIN_KEY`); `None` disables the admin API.
    pub admin_key: Option<String>,
    /// Largest request body accepted, in bytes (`SANDBOX_MAX_BODY_BYTES`, default 1 MiB).
    pub max_body_bytes: usize,
    // -- The request pipeline (every served router, `shared::web::pipeline`) --
    /// Longest a request may take, from its admission to its answer, before it is answered
    /// 503 with Retry-After (`SANDBOX_REQUEST_TIMEOUT_MS`, default 30 000; 0 disables).
    pub request_timeout_ms: u64,
    /// Longest an identified request's body may take to arrive in full before it is answered
    /// 408 (`SANDBOX_BODY_TIMEOUT_MS`, default 10 000; 0 disables).
    pub body_timeout_ms: u64,
    /// Requests served at once by the process; one more is shed at once with 503 and
    /// Retry-After rather than queued. A quarter is kept for the admin key, an eighth for
    /// requests without credentials (the served documents, the console); the tenants have
    /// the rest, an eighth of it kept for tenants not refused in the last second and the
    /// others shared, each busy tenant at most `max(1, shared / (busy tenants + 1))` (see
    /// `shared::web::pipeline::Admission`); credential lookups wait for one of an eighth
    /// (`SANDBOX_MAX_CONCURRENT_REQUESTS`, default 64; 0 disables).
    pub max_concurrent_requests: usize,
    /// Bodies one tenant (or the admin key) may have arriving at once, before admission to
    /// work; one more is shed with 503 at once (`SANDBOX_MAX_BODIES_PER_TENANT`, default 8;
    /// 0 disables).
    pub max_bodies_per_tenant: usize,
    /// Bytes of bodies arriving at once, over all tenants (each body counted at its
    /// `Content-Length`, a chunked one at `max_body_bytes`); past it a body is shed with 503
    /// at once (`SANDBOX_MAX_BODY_BUFFER_BYTES`, default 128 MiB; 0 disables).
    pub max_body_buffer_bytes: usize,
    // -- The local server's connections (`sandbox serve`; API Gateway's on Lambda) --
    /// Longest a request head may take to arrive, and so how long an idle keep-alive
    /// connection is kept, before the connection is closed (`SANDBOX_HEADER_TIMEOUT_MS`,
    /// default 10 000).
    pub header_timeout_ms: u64,
    /// Most connections open at once; at the cap new ones wait in the listen backlog until
    /// one closes (`SANDBOX_MAX_CONNECTIONS`, default 1024).
    pub max_connections: usize,
    /// Most records one fixture document may hold, every object of a list at any depth and
    /// `generated_services.count` counted (`SANDBOX_MAX_FIXTURE_RECORDS`, default
    /// [`crate::fixtures::document::DEFAULT_MAX_DOCUMENT_RECORDS`]): a tenant creation or fixtures
    /// apply over it is refused with 400 before anything is done, so that an apply finishes
    /// within the request deadline instead of being cut off by it; an export over it is 422.
    pub max_fixture_records: u64,
    /// Most tenants the sandbox holds (`SANDBOX_MAX_TENANTS`, default
    /// [`crate::store::registry::DEFAULT_MAX_TENANTS`]): creating or forking one more is a 409.
    pub max_tenants: usize,
    // -- Surface A (legacy XML) --
    /// The XML domain namespace of Surface A (`SANDBOX_XML_NAMESPACE`); `None` keeps the
    /// surface's documented default (`legacy::DEFAULT_XML_NAMESPACE`).
    pub xml_namespace: Option<String>,
    /// The S3 store (`SANDBOX_S3_BUCKET` and friends, see [`s3_from_env`]); `None`: local
    /// files only.
    pub s3: Option<S3Config>,
    /// The master secret bearer tokens are signed with (`SANDBOX_TOKEN_SECRET`, at least
    /// [`MIN_TOKEN_SECRET_LEN`] bytes). `None`: a secret generated once and kept in
    /// `<data_dir>/token-secret` (see `Store::local_token_secret`). Changing it invalidates
    /// every token issued before.
    pub token_secret: Option<String>,
    // -- Sandbox powers --
    /// The request journal (`SANDBOX_JOURNAL` = `off` disables it, default on;
    /// `SANDBOX_JOURNAL_MAX_ENTRIES` default 1000 and `SANDBOX_JOURNAL_MAX_BYTES` default
    /// 16 MiB per tenant per environment; `SANDBOX_JOURNAL_FLUSH_MS` default 2000, how long
    /// new entries wait before an S3-mode environment uploads them).
    pub journal: crate::sandbox::journal::Settings,
    /// Whether the Lambda runtime started this process (`AWS_LAMBDA_RUNTIME_API` set): logs
    /// are JSON lines, and the `sandbox` binary serves as one Lambda function.
    pub lambda: bool,
}

impl Config {
    /// Reads the configuration from the environment, with the documented defaults.
    pub fn from_env() -> Self {
        let data_dir = std::env::var_os("SANDBOX_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("./data"));
        let admin_key = std::env::var("SANDBOX_ADMIN_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        let max_body_bytes = std::env::var("SANDBOX_MAX_BODY_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_BODY_BYTES);
        let xml_namespace = std::env::var("SANDBOX_XML_NAMESPACE")
            .ok()
            .filter(|v| !v.is_empty());
        Config {
            data_dir,
            admin_key,
            max_body_bytes,
            request_timeout_ms: env_number("SANDBOX_REQUEST_TIMEOUT_MS")
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS),
            body_timeout_ms: env_number("SANDBOX_BODY_TIMEOUT_MS")
                .unwrap_or(DEFAULT_BODY_TIMEOUT_MS),
            max_concurrent_requests: env_number("SANDBOX_MAX_CONCURRENT_REQUESTS")
                .unwrap_or(DEFAULT_MAX_CONCURRENT_REQUESTS),
            max_bodies_per_tenant: env_number("SANDBOX_MAX_BODIES_PER_TENANT")
                .unwrap_or(DEFAULT_MAX_BODIES_PER_TENANT),
            max_body_buffer_bytes: env_number("SANDBOX_MAX_BODY_BUFFER_BYTES")
                .unwrap_or(DEFAULT_MAX_BODY_BUFFER_BYTES),
            header_timeout_ms: env_number("SANDBOX_HEADER_TIMEOUT_MS")
                .filter(|ms| *ms > 0)
                .unwrap_or(DEFAULT_HEADER_TIMEOUT_MS),
            max_connections: env_number("SANDBOX_MAX_CONNECTIONS")
                .filter(|n| *n > 0)
                .unwrap_or(DEFAULT_MAX_CONNECTIONS),
            max_fixture_records: env_number("SANDBOX_MAX_FIXTURE_RECORDS")
                .filter(|n| *n > 0)
                .unwrap_or(crate::fixtures::document::DEFAULT_MAX_DOCUMENT_RECORDS),
            max_tenants: env_number("SANDBOX_MAX_TENANTS")
                .unwrap_or(crate::store::registry::DEFAULT_MAX_TENANTS),
            xml_namespace,
            s3: s3_from_env(),
            token_secret: var("SANDBOX_TOKEN_SECRET"),
            journal: journal_from_env(),
            lambda: std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some(),
        }
    }

    /// A configuration for a given data dir and admin key, other settings at their defaults
    /// (local store, token secret kept in the data dir); nothing is read from the environment.
    pub fn new(data_dir: impl Into<PathBuf>, admin_key: Option<String>) -> Self {
        Config {
            data_dir: data_dir.into(),
            admin_key,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            body_timeout_ms: DEFAULT_BODY_TIMEOUT_MS,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            max_bodies_per_tenant: DEFAULT_MAX_BODIES_PER_TENANT,
            max_body_buffer_bytes: DEFAULT_MAX_BODY_BUFFER_BYTES,
            header_timeout_ms: DEFAULT_HEADER_TIMEOUT_MS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_fixture_records: crate::fixtures::document::DEFAULT_MAX_DOCUMENT_RECORDS,
            max_tenants: crate::store::registry::DEFAULT_MAX_TENANTS,
            xml_namespace: None,
            s3: None,
            token_secret: None,
            journal: DEFAULT_JOURNAL,
            lambda: false,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets are never printed.
        f.debug_struct("Config")
            .field("data_dir", &self.data_dir)
            .field("admin_key", &self.admin_key.as_ref().map(|_| "<set>"))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("s3", &self.s3)
            .field("token_secret", &self.token_secret.as_ref().map(|_| "<set>"))
            .field("lambda", &self.lambda)
            .finish()
    }
}

/// Default body deadline: 10 s, far above a 1 MiB body on any working link.
pub const DEFAULT_BODY_TIMEOUT_MS: u64 = 10_000;
/// Default request-head deadline (and keep-alive idle time): 10 s.
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 10_000;
/// Default cap on the local server's open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Shortest accepted `SANDBOX_TOKEN_SECRET`, in bytes (a rule of the credentials, kept in
/// [`crate::auth`]).
pub use crate::auth::MIN_TOKEN_SECRET_LEN;

/// A non-blank environment variable.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The S3 store of the environment, `None` when `SANDBOX_S3_BUCKET` is unset: bucket,
/// `SANDBOX_S3_PREFIX`, `SANDBOX_S3_ENDPOINT` (an S3-compatible server, path-style) and
/// `SANDBOX_S3_COMPACT_EVERY`, `SANDBOX_S3_ATTEMPT_TIMEOUT_MS`, `SANDBOX_S3_WRITE_DEADLINE_MS`
/// (and the test hook `SANDBOX_S3_CRASH_AT`).
/// Region and credentials come from the standard AWS variables,
/// which the SDK reads itself.
pub fn s3_from_env() -> Option<S3Config> {
    let bucket = var("SANDBOX_S3_BUCKET")?;
    let mut config = S3Config::new(
        bucket,
        var("SANDBOX_S3_PREFIX").as_deref().unwrap_or(""),
        var("SANDBOX_S3_ENDPOINT"),
    );
    if let Some(every) = var("SANDBOX_S3_COMPACT_EVERY").and_then(|v| v.parse().ok()) {
        config.compact_every = every;
    }
    let millis = |name: &str| {
        var(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
    };
    if let Some(t) = millis("SANDBOX_S3_ATTEMPT_TIMEOUT_MS") {
        config.attempt_timeout = t;
    }
    if let Some(t) = millis("SANDBOX_S3_WRITE_DEADLINE_MS") {
        config.write_deadline = t;
    }
    config.crash_at = var("SANDBOX_S3_CRASH_AT").and_then(|v| CrashAt::parse(&v));
    Some(config)
}

/// Default request body limit: 1 MiB, ample for 50 usage events or any XML entity.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Default request timeout: 30 s, far above any answer the sandbox gives (a collector run over
/// 20,000 records takes under 2 s in a debug build) and equal to API Gateway's
/// integration limit, so a Lambda answers in the surface's shape before the gateway gives up.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;

/// Default concurrency limit: 64 requests in flight per process; the tenant databases
/// serialize writes anyway, so more would only queue.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 64;
/// Default bodies arriving at once per tenant (or for the admin key).
pub const DEFAULT_MAX_BODIES_PER_TENANT: usize = 8;
/// Default bytes of bodies arriving at once, all tenants together: 128 MiB (16 tenants with
/// their 8 bodies of the largest size, 1 MiB).
pub const DEFAULT_MAX_BODY_BUFFER_BYTES: usize = 128 * 1024 * 1024;

/// The journal's defaults: on, 1000 entries and 16 MiB per tenant per environment, uploads
/// at most every 2 s.
pub const DEFAULT_JOURNAL: crate::sandbox::journal::Settings = crate::sandbox::journal::Settings {
    enabled: true,
    max_entries: 1000,
    max_bytes: 16 * 1024 * 1024,
    flush_every: std::time::Duration::from_millis(2000),
};

/// The journal settings of the environment (see [`Config::journal`]); a value out of its
/// range (entries 1..=100000, bytes 64 KiB..=1 GiB, flush 100..=600000 ms) keeps the default.
fn journal_from_env() -> crate::sandbox::journal::Settings {
    let d = DEFAULT_JOURNAL;
    crate::sandbox::journal::Settings {
        enabled: !var("SANDBOX_JOURNAL").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "off" | "false" | "0" | "no"
            )
        }),
        max_entries: env_number("SANDBOX_JOURNAL_MAX_ENTRIES")
            .filter(|n| (1..=100_000).contains(n))
            .unwrap_or(d.max_entries),
        max_bytes: env_number("SANDBOX_JOURNAL_MAX_BYTES")
            .filter(|n| (64 * 1024..=1024 * 1024 * 1024).contains(n))
            .unwrap_or(d.max_bytes),
        flush_every: env_number("SANDBOX_JOURNAL_FLUSH_MS")
            .filter(|n| (100..=600_000).contains(n))
            .map(std::time::Duration::from_millis)
            .unwrap_or(d.flush_every),
    }
}

/// A numeric variable, when set and a number.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}
