//! The S3 implementation of [`ObjectStore`]: the AWS SDK against a bucket (or an
//! S3-compatible server such as moto), under a key prefix. See `object_store.rs` for the
//! error contract it keeps, `s3.rs` for the settings and the per-thread deadline.
//!
//! Bounds: every call has an attempt timeout and an operation timeout (SDK retries included),
//! from [`S3Config`]; on top of that, a caller may run a block under
//! [`with_deadline`](super::s3::with_deadline), and every call made inside it by that thread
//! gives up when the deadline passes (a write uses this for its one total deadline).
//!
//! The store code is synchronous (SQLite runs on blocking threads, the registry is called
//! from extractors), so the SDK runs on its own small tokio runtime, created once per process
//! and never dropped; callers block on a channel until their request finishes. This works the
//! same from a plain thread, a blocking-pool thread and an async worker thread.

use super::object_store::ObjectStore;
use super::s3::{S3Config, S3Error};
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use std::future::Future;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Attempts per S3 call (the SDK retries throttling, 5xx and network errors).
const MAX_ATTEMPTS: u32 = 3;
/// Timeouts of snapshot transfers, whose size grows with the tenant.
const BULK_OPERATION_TIMEOUT: Duration = Duration::from_secs(900);
const BULK_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(300);

/// A bucket and prefix, with its clients built once.
#[derive(Clone, Debug)]
pub struct AwsStore {
    /// For log entries and listings: short timeouts, so that a write fails fast.
    client: aws_sdk_s3::Client,
    /// For snapshots: the same client with timeouts fit for large files.
    bulk: aws_sdk_s3::Client,
    bucket: String,
    /// Key prefix, empty or ending in `/`.
    prefix: String,
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

/// Runs `fut` on the S3 runtime and blocks the calling thread until it finishes, or until
/// the thread's [`with_deadline`] passes (the request is then dropped: whatever S3 does with
/// a request already sent is the caller's to settle).
fn block_on<T: Send + 'static>(
    fut: impl Future<Output = Result<T, S3Error>> + Send + 'static,
) -> Result<T, S3Error> {
    let deadline = super::s3::current_deadline();
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

impl AwsStore {
    /// Builds a client for `config` (region and credentials from the standard AWS chain;
    /// `us-east-1` when no region is configured; HTTPS through rustls with ring).
    pub fn connect(config: &S3Config) -> Result<AwsStore, S3Error> {
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
        Ok(AwsStore {
            client,
            bulk,
            bucket: config.bucket.clone(),
            prefix: config.prefix.clone(),
        })
    }

    fn key(&self, relative: &str) -> String {
        format!("{}{relative}", self.prefix)
    }

    fn bulk_parts(&self, relative: &str) -> (aws_sdk_s3::Client, String, String) {
        (self.bulk.clone(), self.bucket.clone(), self.key(relative))
    }

    fn parts(&self, relative: &str) -> (aws_sdk_s3::Client, String, String) {
        (self.client.clone(), self.bucket.clone(), self.key(relative))
    }
}

impl ObjectStore for AwsStore {
    /// Creates `key` with `body` only if no object has that key (`If-None-Match: *`).
    fn put_if_absent(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
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
    fn put_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
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
    fn get(&self, key: &str) -> Result<Vec<u8>, S3Error> {
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
    fn get_to_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
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
    fn list_after(
        &self,
        prefix: &str,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<String>, S3Error> {
        let (client, bucket, prefix) = self.parts(prefix);
        let start_after = self.key(start_after);
        let root = self.prefix.clone();
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
    fn delete(&self, key: &str) -> Result<(), S3Error> {
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
    fn copy(&self, from: &str, to: &str) -> Result<(), S3Error> {
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
}
