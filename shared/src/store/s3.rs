//! A small, blocking view of one S3 bucket (or an S3-compatible server) under a key prefix:
//! exactly the operations the replication protocol needs (see `replica`).
//!
//! Error contract: every method answers [`S3Error::Exists`] only for a refused conditional
//! write (HTTP 412 or 409), [`S3Error::NotFound`] only for a missing key, and
//! [`S3Error::Unavailable`] for everything else (network, timeouts, throttling, access denied,
//! 5xx). Callers turn `Unavailable` into `Error::Unavailable` (a 503 that applied nothing).
//!
//! The store code is synchronous (SQLite runs on blocking threads, the registry is called
//! from extractors), so the SDK runs on its own small tokio runtime, created once per process
//! and never dropped; callers block on a channel until their request finishes. This works the
//! same from a plain thread, a blocking-pool thread and an async worker thread.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use std::future::Future;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// Whole-operation timeout of one S3 call (retries included).
const OPERATION_TIMEOUT: Duration = Duration::from_secs(20);
/// Timeout of one attempt of an S3 call.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(8);
/// Attempts per S3 call (the SDK retries throttling, 5xx and network errors).
const MAX_ATTEMPTS: u32 = 3;
/// Timeouts of snapshot transfers, whose size grows with the tenant.
const BULK_OPERATION_TIMEOUT: Duration = Duration::from_secs(900);
const BULK_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(300);

/// Where the S3 store lives (read from the environment by `config::s3_from_env`); region and
/// credentials come from the standard AWS variables.
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
            compact_every: super::replica::DEFAULT_COMPACT_EVERY,
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

/// Runs `fut` on the S3 runtime and blocks the calling thread until it finishes.
fn block_on<T: Send + 'static>(
    fut: impl Future<Output = Result<T, S3Error>> + Send + 'static,
) -> Result<T, S3Error> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| S3Error::Unavailable("S3 task ended without an answer".into()))?
}

/// The HTTP status of a failed SDK call, when the server answered at all.
fn status_of<E>(e: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Option<u16> {
    e.raw_response().map(|r| r.status().as_u16())
}

fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(
    op: &str,
    key: &str,
    e: SdkError<E, R>,
) -> S3Error {
    let detail = aws_sdk_s3::error::DisplayErrorContext(&e);
    S3Error::Unavailable(format!("{op} {key}: {detail}"))
}

impl Bucket {
    /// Builds a client for `config` (region and credentials from the standard AWS chain;
    /// `us-east-1` when no region is configured).
    pub fn connect(config: S3Config) -> Result<Bucket, S3Error> {
        let endpoint = config.endpoint.clone();
        let (client, bulk) = block_on(async move {
            let region = aws_config::meta::region::RegionProviderChain::default_provider()
                .or_else("us-east-1");
            let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .region(region)
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
                    .connect_timeout(Duration::from_secs(3))
                    .build()
            };
            let small = builder
                .clone()
                .timeout_config(timeouts(OPERATION_TIMEOUT, ATTEMPT_TIMEOUT))
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
