//! A small, blocking view of one S3 bucket (or an S3-compatible server) under a key prefix:
//! exactly the operations the replication protocol needs (see `replica`).
//!
//! Error contract: every method answers [`S3Error::Exists`] only for a refused conditional
//! write (HTTP 412 or 409), [`S3Error::NotFound`] only for a missing key,
//! [`S3Error::DeadlinePassed`] when the caller's [`with_deadline`] ran out,
//! [`S3Error::Refused`] for any other 4xx except throttling and timeouts (403, 400, ...), and
//! [`S3Error::Unavailable`] for everything else (network, timeouts, throttling, access denied,
//! 5xx). Neither of the last two says nothing about whether a PUT took effect: a
//! request abandoned by a timeout may still reach S3 later. The write path settles that
//! itself (see `replica`, fencing); everywhere else `Unavailable` becomes `Error::Unavailable`.
//!
//! Bounds: every call has an attempt timeout and an operation timeout (SDK retries included),
//! from [`S3Config`]; on top of that, a caller may run a block under [`with_deadline`], and
//! every call made inside it by that thread gives up when the deadline passes (a write uses
//! this for its one total deadline).
//!
//! The store code is synchronous (SQLite runs on blocking threads, the registry is called
//! from extractors), so the SDK runs on its own small tokio runtime, created once per process
//! and never dropped; callers block on a channel until their request finishes. This works the
//! same from a plain thread, a blocking-pool thread and an async worker thread.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use std::cell::Cell;
use std::future::Future;
use std::path::Path;
use std::sync::OnceLock;
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
/// Attempts per S3 call (the SDK retries throttling, 5xx and network errors).
const MAX_ATTEMPTS: u32 = 3;
/// Timeouts of snapshot transfers, whose size grows with the tenant.
const BULK_OPERATION_TIMEOUT: Duration = Duration::from_secs(900);
const BULK_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(300);

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

/// A bucket and prefix, with a client built once.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// For log entries and listings: short timeouts, so that a write fails fast.
    client: aws_sdk_s3::Client,
    /// For snapshots: the same client with timeouts fit for large files.
    bulk: aws_sdk_s3::Client,
    config: S3Config,
}

fn runtime() -> Result<&'static tokio::runtime::Runtime, S3Error> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("s3-io")
        .enable_all()
        .build()
        .map_err(|e| S3Error::Unavailable(format!("cannot start the S3 runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

thread_local! {
    /// The deadline of the block this thread runs under [`with_deadline`], if any.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `f` with every S3 call this thread makes inside it bounded by `deadline` (or by an
/// enclosing block's earlier deadline): a call still running then is abandoned and answers
/// [`S3Error::Unavailable`]; a call started after it answers that at once, sending nothing.
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

/// Runs `fut` on the S3 runtime and blocks the calling thread until it finishes, or until
/// the thread's [`with_deadline`] passes (the request is then dropped: whatever S3 does with
/// a request already sent is the caller's to settle).
fn block_on<T: Send + 'static>(
    fut: impl Future<Output = Result<T, S3Error>> + Send + 'static,
) -> Result<T, S3Error> {
    let deadline = DEADLINE.with(Cell::get);
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(S3Error::DeadlinePassed);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let out = match deadline {
            Some(d) => tokio::time::timeout_at(tokio::time::Instant::from_std(d), fut)
                .await
                .unwrap_or(Err(S3Error::DeadlinePassed)),
            None => fut.await,
        };
        let _ = tx.send(out);
    });
    rx.recv()
        .map_err(|_| S3Error::Unavailable("S3 task ended without an answer".into()))?
}

/// The HTTP status of a failed SDK call, when the server answered at all.
fn status_of<E>(e: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Option<u16> {
    e.raw_response().map(|r| r.status().as_u16())
}

fn unavailable<E: std::error::Error + 'static>(
    op: &str,
    key: &str,
    e: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> S3Error {
    let status = status_of(&e);
    let detail = aws_sdk_s3::error::DisplayErrorContext(&e);
    let message = format!("{op} {key}: {detail}");
    match status {
        Some(s) if (400..500).contains(&s) && !matches!(s, 408 | 429) => S3Error::Refused(message),
        _ => S3Error::Unavailable(message),
    }
}

impl Bucket {
    /// Builds a client for `config` (region and credentials from the standard AWS chain;
    /// `us-east-1` when no region is configured; HTTPS through rustls with ring).
    pub fn connect(config: S3Config) -> Result<Bucket, S3Error> {
        let endpoint = config.endpoint.clone();
        let attempt_timeout = config.attempt_timeout;
        let operation_timeout = attempt_timeout.saturating_mul(5) / 2;
        let (client, bulk) = block_on(async move {
            // rustls over ring: the SDK's default client would link aws-lc (see Cargo.toml).
            let https = aws_smithy_http_client::Builder::new()
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                    aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                ))
                .build_https();
            // The SDK's default region chain (environment, profile, IMDS), built here because
            // its IMDS step needs the HTTP client (there is no default one to fall back on).
            let providers = aws_config::provider_config::ProviderConfig::default()
                .with_http_client(https.clone());
            let region = aws_config::meta::region::RegionProviderChain::first_try(
                aws_config::environment::region::EnvironmentVariableRegionProvider::new(),
            )
            .or_else(
                aws_config::profile::region::ProfileFileRegionProvider::builder()
                    .configure(&providers)
                    .build(),
            )
            .or_else(
                aws_config::imds::region::ImdsRegionProvider::builder()
                    .configure(&providers)
                    .build(),
            )
            .or_else("us-east-1");
            let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .region(region)
                .http_client(https)
                .load()
                .await;
            let mut builder = aws_sdk_s3::config::Builder::from(&shared).retry_config(
                aws_sdk_s3::config::retry::RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS),
            );
            if let Some(url) = endpoint {
                builder = builder.endpoint_url(url).force_path_style(true);
            }
            let timeouts = |operation, attempt| {
                aws_sdk_s3::config::timeout::TimeoutConfig::builder()
                    .operation_timeout(operation)
                    .operation_attempt_timeout(attempt)
                    .connect_timeout(attempt.min(Duration::from_secs(3)))
                    .build()
            };
            let small = builder
                .clone()
                .timeout_config(timeouts(operation_timeout, attempt_timeout))
                .build();
            let bulk = builder
                .timeout_config(timeouts(BULK_OPERATION_TIMEOUT, BULK_ATTEMPT_TIMEOUT))
                .build();
            Ok((
                aws_sdk_s3::Client::from_conf(small),
                aws_sdk_s3::Client::from_conf(bulk),
            ))
        })?;
        Ok(Bucket {
            client,
            bulk,
            config,
        })
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

    /// Creates `key` with `body` only if no object has that key (`If-None-Match: *`).
    pub fn put_if_absent(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        let (client, bucket, key) = self.parts(key);
        block_on(async move {
            let sent = client
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .if_none_match("*")
                .body(ByteStream::from(body))
                .send()
                .await;
            match sent {
                Ok(_) => Ok(()),
                Err(e) if matches!(status_of(&e), Some(412 | 409)) => Err(S3Error::Exists),
                Err(e) => Err(unavailable("PUT", &key, e)),
            }
        })
    }

    /// Uploads the file at `path` to `key`, replacing any object there.
    pub fn put_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        let (client, bucket, key) = self.bulk_parts(key);
        let path = path.to_path_buf();
        block_on(async move {
            let body = ByteStream::from_path(&path)
                .await
                .map_err(|e| S3Error::Unavailable(format!("read {}: {e}", path.display())))?;
            client
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .body(body)
                .send()
                .await
                .map(drop)
                .map_err(|e| unavailable("PUT", &key, e))
        })
    }

    /// The whole content of `key`.
    pub fn get(&self, key: &str) -> Result<Vec<u8>, S3Error> {
        let (client, bucket, key) = self.parts(key);
        block_on(async move {
            let out = match client.get_object().bucket(&bucket).key(&key).send().await {
                Ok(out) => out,
                Err(e) if status_of(&e) == Some(404) => return Err(S3Error::NotFound),
                Err(e) => return Err(unavailable("GET", &key, e)),
            };
            let bytes = out
                .body
                .collect()
                .await
                .map_err(|e| S3Error::Unavailable(format!("GET {key}: body: {e}")))?;
            Ok(bytes.into_bytes().to_vec())
        })
    }

    /// Streams `key` into a new file at `path`.
    pub fn get_to_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        let (client, bucket, key) = self.bulk_parts(key);
        let path = path.to_path_buf();
        block_on(async move {
            use tokio::io::AsyncWriteExt;
            let mut out = match client.get_object().bucket(&bucket).key(&key).send().await {
                Ok(out) => out,
                Err(e) if status_of(&e) == Some(404) => return Err(S3Error::NotFound),
                Err(e) => return Err(unavailable("GET", &key, e)),
            };
            let io =
                |e: std::io::Error| S3Error::Unavailable(format!("write {}: {e}", path.display()));
            let mut file = tokio::fs::File::create(&path).await.map_err(io)?;
            while let Some(chunk) = out.body.next().await {
                let chunk =
                    chunk.map_err(|e| S3Error::Unavailable(format!("GET {key}: body: {e}")))?;
                file.write_all(&chunk).await.map_err(io)?;
            }
            file.sync_all().await.map_err(io)?;
            Ok(())
        })
    }

    /// Keys under `prefix` that sort after `start_after`, ascending; at most `limit` of them.
    /// Keys in and out are relative to the configured prefix.
    pub fn list_after(
        &self,
        prefix: &str,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<String>, S3Error> {
        let (client, bucket, prefix) = self.parts(prefix);
        let start_after = self.key(start_after);
        let root = self.config.prefix.clone();
        block_on(async move {
            let mut keys = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let page_size =
                    i32::try_from(limit.saturating_sub(keys.len()).min(1000)).unwrap_or(1000);
                let mut req = client
                    .list_objects_v2()
                    .bucket(&bucket)
                    .prefix(&prefix)
                    .max_keys(page_size);
                req = match &token {
                    Some(t) => req.continuation_token(t),
                    None => req.start_after(&start_after),
                };
                let page = req
                    .send()
                    .await
                    .map_err(|e| unavailable("LIST", &prefix, e))?;
                keys.extend(page.contents().iter().filter_map(|o| {
                    o.key()
                        .and_then(|k| k.strip_prefix(root.as_str()))
                        .map(String::from)
                }));
                token = page.next_continuation_token().map(String::from);
                if token.is_none() || keys.len() >= limit {
                    break;
                }
            }
            keys.sort();
            keys.truncate(limit);
            Ok(keys)
        })
    }

    /// Deletes `key` (a missing key is not an error).
    pub fn delete(&self, key: &str) -> Result<(), S3Error> {
        let (client, bucket, key) = self.parts(key);
        block_on(async move {
            client
                .delete_object()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await
                .map(drop)
                .map_err(|e| unavailable("DELETE", &key, e))
        })
    }

    /// Copies `from` to `to` inside the bucket (`CopyObject`: S3 copies the bytes itself,
    /// nothing passes through this process), replacing any object at `to`. A missing source
    /// is [`S3Error::NotFound`]. Keys here are made of `A-Z a-z 0-9 - _ . /`, so the copy
    /// source needs no escaping.
    pub fn copy(&self, from: &str, to: &str) -> Result<(), S3Error> {
        let (client, bucket, to) = self.bulk_parts(to);
        let source = format!("{bucket}/{}", self.key(from));
        block_on(async move {
            match client
                .copy_object()
                .bucket(&bucket)
                .key(&to)
                .copy_source(&source)
                .send()
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if status_of(&e) == Some(404) => Err(S3Error::NotFound),
                Err(e) => Err(unavailable("COPY", &to, e)),
            }
        })
    }

    fn bulk_parts(&self, relative: &str) -> (aws_sdk_s3::Client, String, String) {
        (
            self.bulk.clone(),
            self.config.bucket.clone(),
            self.key(relative),
        )
    }

    fn parts(&self, relative: &str) -> (aws_sdk_s3::Client, String, String) {
        (
            self.client.clone(),
            self.config.bucket.clone(),
            self.key(relative),
        )
    }
}
