//! The request journal: every request to a tenant as it was served (time, surface, method,
//! path, query, status, duration, the request's headers and the first [`BODY_LIMIT`] bytes
//! of both bodies, the fault rule that answered it), credentials and secrets redacted.
//!
//! Where it lives: in the memory of the environment (process) that served the request, per
//! tenant, bounded by a count and a byte size (oldest dropped first). Recording never writes
//! tenant state: in S3 mode each environment also uploads its new entries in batches (one
//! object per tenant a flush interval after the first entry not uploaded, or at once when
//! [`FLUSH_BATCH`] are pending) under `tenants/<id>/journal/`, beside the tenant's log and
//! never in it, and a read merges its own memory with the batches of the other
//! environments. An environment that stops (a Lambda frozen then reclaimed) loses what it
//! had not uploaded yet: at most one flush interval of requests. Clearing deletes
//! the batches and writes a marker (`tenants/<id>/journal-cleared`) that hides every entry
//! older than it, including ones still in other environments' memory.
//!
//! Cost on the request path: the layer hands over the request's parts as they are ([`Raw`]:
//! the header map, the URI, the bodies as shared `Bytes`, no copy below [`BODY_LIMIT`]) and
//! one push under a lock. Everything else (the entry's id and time texts, the header list,
//! the bodies' text and the redaction) is done once per entry, later, by whoever needs the
//! entry first: a journal read or an upload ([`Item`]).
//!
//! Redaction: the headers `Authorization`, `Proxy-Authorization`, `X-Api-Key`,
//! `X-Admin-Key` and `Cookie`/`Set-Cookie` are kept by name with the value `[redacted]`;
//! in JSON bodies every member named like a secret ([`SECRET_FIELDS`], e.g. the
//! `access_token` answered by the token endpoint, `api_key`, `password`) is replaced too.

use crate::store::s3::{Bucket, S3Error};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of each body kept.
pub const BODY_LIMIT: usize = 64 * 1024;
/// Headers whose values are never kept.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-admin-key",
    "cookie",
    "set-cookie",
];
/// JSON members whose values are never kept (compared case-insensitively).
pub const SECRET_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "api_key",
    "password",
    "secret",
    "client_secret",
];
/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";
/// Entries uploaded at once at most (a fuller batch is uploaded before the interval ends).
pub const FLUSH_BATCH: usize = 200;
/// Batches of other environments read per journal read at most (newest first).
pub const MAX_BATCHES_READ: usize = 50;

/// One request as served.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Unique and time-ordered: `<ms since epoch, 13 digits>-<environment>-<sequence>`.
    pub id: String,
    /// When the request arrived (real time, UTC).
    pub time: String,
    /// The environment (process) that served it.
    pub environment: String,
    /// `A`, `B`, `C` or `admin`.
    pub surface: String,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The status answered.
    pub status: u16,
    /// Time to the answer, in milliseconds.
    pub duration_ms: f64,
    /// Request headers, secrets redacted.
    pub request_headers: Vec<(String, String)>,
    /// The request body's first [`BODY_LIMIT`] bytes (text, lossy UTF-8), secrets redacted.
    pub request_body: String,
    /// Whether the request body was longer (or not read: no length given).
    pub request_body_truncated: bool,
    /// The response body's first [`BODY_LIMIT`] bytes, secrets redacted.
    pub response_body: String,
    /// Whether the response body was longer.
    pub response_body_truncated: bool,
    /// The fault rule that answered (or delayed) it.
    pub fault: Option<String>,
}

/// One request as the layer hands it over: its parts as they were, nothing converted.
#[derive(Debug, Clone)]
pub struct Raw {
    /// When the request arrived (real time).
    pub time: chrono::DateTime<chrono::Utc>,
    /// `A`, `B`, `C` or `admin`.
    pub surface: &'static str,
    /// The request's method.
    pub method: http::Method,
    /// The request's URI (path and query).
    pub uri: http::Uri,
    /// The request's headers.
    pub headers: http::HeaderMap,
    /// The request body as read; `None` when it was not read (no length given, or over
    /// the body limit).
    pub request_body: Option<Bytes>,
    /// The status answered.
    pub status: u16,
    /// Time to the answer, in milliseconds.
    pub duration_ms: f64,
    /// The response body.
    pub response_body: Bytes,
    /// The fault rule that answered (or delayed) it.
    pub fault: Option<String>,
}

/// A body as kept until it is converted: at most [`BODY_LIMIT`] bytes (shared with the
/// request or response when it is not longer, a copy of the first ones when it is), and
/// whether it was longer.
#[derive(Debug)]
struct KeptBody {
    bytes: Bytes,
    truncated: bool,
}

impl KeptBody {
    fn of(bytes: Option<Bytes>) -> KeptBody {
        match bytes {
            None => KeptBody {
                bytes: Bytes::new(),
                truncated: true,
            },
            Some(b) if b.len() > BODY_LIMIT => KeptBody {
                bytes: Bytes::copy_from_slice(&b[..BODY_LIMIT]),
                truncated: true,
            },
            Some(b) => KeptBody {
                bytes: b,
                truncated: false,
            },
        }
    }

    fn text(&self) -> (String, bool) {
        body_text(&self.bytes, self.truncated)
    }
}

/// What a [`Raw`] becomes once recorded: the parts the entry is made of.
#[derive(Debug)]
struct Parts {
    time: chrono::DateTime<chrono::Utc>,
    surface: &'static str,
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    request_body: KeptBody,
    status: u16,
    duration_ms: f64,
    response_body: KeptBody,
    fault: Option<String>,
}

/// A recorded request: its parts until someone needs the entry, then the entry (made once;
/// the parts are dropped then).
#[derive(Debug)]
pub struct Item {
    /// The entry's id, `<ms since epoch, 13 digits>-<environment>-<sequence>`, made when
    /// the entry is.
    millis: i64,
    sequence: u64,
    /// Memory the item is counted for (what its entry will hold, roughly).
    size: usize,
    cell: Mutex<Cell>,
}

#[derive(Debug)]
enum Cell {
    Parts(Box<Parts>),
    Entry(Arc<Entry>),
}

impl Item {
    fn new(raw: Raw, sequence: u64) -> Item {
        let request_body = KeptBody::of(raw.request_body);
        let response_body = KeptBody::of(Some(raw.response_body));
        let size = 256
            + raw.uri.path().len()
            + raw.uri.query().map_or(0, str::len)
            + request_body.bytes.len()
            + response_body.bytes.len()
            + raw
                .headers
                .iter()
                .map(|(k, v)| k.as_str().len() + v.len())
                .sum::<usize>();
        Item {
            millis: raw.time.timestamp_millis().max(0),
            sequence,
            size,
            cell: Mutex::new(Cell::Parts(Box::new(Parts {
                time: raw.time,
                surface: raw.surface,
                method: raw.method,
                uri: raw.uri,
                headers: raw.headers,
                request_body,
                status: raw.status,
                duration_ms: raw.duration_ms,
                response_body,
                fault: raw.fault,
            }))),
        }
    }

    /// The entry, made on first use (id and time texts, redacted headers and bodies).
    fn entry(&self, environment: &str) -> Arc<Entry> {
        let mut cell = crate::store::lock(&self.cell);
        let parts = match &*cell {
            Cell::Entry(e) => return e.clone(),
            Cell::Parts(p) => p,
        };
        let (request_body, request_body_truncated) = parts.request_body.text();
        let (response_body, response_body_truncated) = parts.response_body.text();
        let entry = Arc::new(Entry {
            id: format!("{:013}-{environment}-{:08}", self.millis, self.sequence),
            time: crate::time::to_storage(parts.time),
            environment: environment.to_string(),
            surface: parts.surface.to_string(),
            method: parts.method.to_string(),
            path: parts.uri.path().to_string(),
            query: parts.uri.query().map(str::to_string),
            status: parts.status,
            duration_ms: parts.duration_ms,
            request_headers: headers(&parts.headers),
            request_body,
            request_body_truncated,
            response_body,
            response_body_truncated,
            fault: parts.fault.clone(),
        });
        *cell = Cell::Entry(entry.clone());
        entry
    }
}

impl Entry {
    /// The instant of the entry, in milliseconds since the epoch (from its id).
    fn millis(&self) -> i64 {
        self.id
            .split('-')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }
}

/// Bounds and behaviour of the journal (from [`crate::config::Config`]).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Whether requests are recorded at all.
    pub enabled: bool,
    /// Entries kept per tenant per environment.
    pub max_entries: usize,
    /// Bytes kept per tenant per environment.
    pub max_bytes: usize,
    /// How long new entries wait before they are uploaded (S3 mode).
    pub flush_every: Duration,
}

/// A filter of a journal read.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Method, any case.
    pub method: Option<String>,
    /// Path glob (as fault rules use them), compiled once per read.
    pub path: Option<super::glob::Glob>,
    /// Exact status, or a class `1xx`..`5xx` as (low, high).
    pub status: Option<(u16, u16)>,
    /// From this instant on (ms since the epoch, inclusive).
    pub from_ms: Option<i64>,
    /// Before this instant (ms since the epoch, exclusive).
    pub to_ms: Option<i64>,
}

impl Filter {
    fn keeps(&self, e: &Entry) -> bool {
        let millis = e.millis();
        self.method
            .as_ref()
            .is_none_or(|m| m.eq_ignore_ascii_case(&e.method))
            && self.path.as_ref().is_none_or(|glob| glob.matches(&e.path))
            && self
                .status
                .is_none_or(|(low, high)| (low..=high).contains(&e.status))
            && self.from_ms.is_none_or(|f| millis >= f)
            && self.to_ms.is_none_or(|t| millis < t)
    }
}

/// One tenant's entries in this environment.
#[derive(Default)]
struct Kept {
    entries: VecDeque<Arc<Item>>,
    bytes: usize,
    /// Entries not uploaded yet (S3 mode), with the time the oldest was added.
    pending: Vec<Arc<Item>>,
    pending_since: Option<Instant>,
}

/// When a tenant's pending entries are to be uploaded (S3 mode).
#[derive(Debug)]
pub enum Flush {
    /// Not now: nothing to upload, or an upload is scheduled already.
    Nothing,
    /// This full batch, at once.
    Now(Vec<Arc<Item>>),
    /// Whatever is pending after this long ([`Journal::take_pending`]).
    After(Duration),
}

/// The journal of this environment.
pub struct Journal {
    settings: Settings,
    environment: String,
    bucket: Option<Bucket>,
    sequence: std::sync::atomic::AtomicU64,
    tenants: Mutex<HashMap<String, Kept>>,
}

impl Journal {
    /// A journal for this process; `bucket` set in S3 mode.
    pub fn new(settings: Settings, bucket: Option<Bucket>) -> Journal {
        Journal {
            settings,
            environment: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            bucket,
            sequence: Default::default(),
            tenants: Mutex::default(),
        }
    }

    /// Whether requests are recorded.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// This environment's id.
    pub fn environment(&self) -> &str {
        &self.environment
    }

    /// Records a request of `tenant` (nothing converted here: see [`Item`]), dropping its
    /// oldest entries past the bounds, and says when its pending entries are to be uploaded
    /// (S3 mode): the caller uploads off the request's path.
    pub fn record(&self, tenant: &str, raw: Raw) -> Flush {
        let sequence = self
            .sequence
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let entry = Arc::new(Item::new(raw, sequence));
        let mut tenants = crate::store::lock(&self.tenants);
        if !tenants.contains_key(tenant) {
            tenants.insert(tenant.to_string(), Kept::default());
        }
        let Some(kept) = tenants.get_mut(tenant) else {
            return Flush::Nothing;
        };
        kept.bytes += entry.size;
        kept.entries.push_back(entry.clone());
        while kept.entries.len() > self.settings.max_entries
            || (kept.bytes > self.settings.max_bytes && kept.entries.len() > 1)
        {
            if let Some(old) = kept.entries.pop_front() {
                kept.bytes = kept.bytes.saturating_sub(old.size);
            }
        }
        if self.bucket.is_none() {
            return Flush::Nothing;
        }
        kept.pending.push(entry);
        if kept.pending.len() >= FLUSH_BATCH {
            kept.pending_since = None;
            return Flush::Now(std::mem::take(&mut kept.pending));
        }
        if kept.pending_since.is_some() {
            // An upload is scheduled already.
            return Flush::Nothing;
        }
        kept.pending_since = Some(Instant::now());
        Flush::After(self.settings.flush_every)
    }

    /// Uploads a batch of `tenant`'s entries (blocking: one PUT). A failure loses the batch
    /// from the other environments' view only; this one still holds it in memory.
    pub fn upload(&self, tenant: &str, batch: &[Arc<Item>]) {
        let Some(bucket) = &self.bucket else {
            return;
        };
        let entries: Vec<Arc<Entry>> = batch.iter().map(|i| i.entry(&self.environment)).collect();
        let Some(first) = entries.first() else {
            return;
        };
        let key = format!("tenants/{tenant}/journal/{}.json", first.id);
        let entries: Vec<&Entry> = entries.iter().map(|e| e.as_ref()).collect();
        let sent = serde_json::to_vec(&entries)
            .map_err(|e| S3Error::Unavailable(e.to_string()))
            .and_then(|body| bucket.put_if_absent(&key, body));
        if let Err(e) = sent {
            tracing::warn!(tenant, error = %e, "journal batch not uploaded");
        }
    }

    /// The entries of `tenant` not uploaded yet (S3 mode), taken from memory for an upload;
    /// at most the retention (older ones would be dropped anyway).
    pub fn take_pending(&self, tenant: &str) -> Vec<Arc<Item>> {
        let mut tenants = crate::store::lock(&self.tenants);
        match tenants.get_mut(tenant) {
            Some(kept) if self.bucket.is_some() => {
                kept.pending_since = None;
                let mut batch = std::mem::take(&mut kept.pending);
                let keep = batch.len().min(self.settings.max_entries);
                batch.split_off(batch.len() - keep)
            }
            _ => Vec::new(),
        }
    }

    /// The entries of `tenant` that `filter` keeps, newest first: this environment's memory
    /// merged (S3 mode) with the uploaded batches of every environment (blocking: one LIST
    /// and at most [`MAX_BATCHES_READ`] GETs), hidden before the last clear.
    pub fn read(&self, tenant: &str, filter: &Filter) -> crate::Result<Vec<Arc<Entry>>> {
        let mine: Vec<Arc<Item>> = crate::store::lock(&self.tenants)
            .get(tenant)
            .map(|kept| kept.entries.iter().cloned().collect())
            .unwrap_or_default();
        // Made outside the journal's lock (each item's entry once, then kept).
        let mut all: HashMap<String, Arc<Entry>> = mine
            .iter()
            .map(|item| {
                let e = item.entry(&self.environment);
                (e.id.clone(), e)
            })
            .collect();
        let mut cleared_ms = 0;
        if let Some(bucket) = &self.bucket {
            cleared_ms = cleared_at(bucket, tenant)?;
            let prefix = format!("tenants/{tenant}/journal/");
            let mut keys = bucket.list_after(&prefix, &prefix, usize::MAX)?;
            keys.reverse();
            for key in keys.iter().take(MAX_BATCHES_READ) {
                let body = match bucket.get(key) {
                    Ok(body) => body,
                    Err(S3Error::NotFound) => continue,
                    Err(e) => return Err(e.into()),
                };
                let Ok(batch) = serde_json::from_slice::<Vec<Entry>>(&body) else {
                    tracing::warn!(key, "unreadable journal batch skipped");
                    continue;
                };
                for e in batch {
                    all.entry(e.id.clone()).or_insert_with(|| Arc::new(e));
                }
            }
        }
        let mut kept: Vec<Arc<Entry>> = all
            .into_values()
            .filter(|e| e.millis() >= cleared_ms && filter.keeps(e))
            .collect();
        kept.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(kept)
    }

    /// Clears `tenant`'s journal: this environment's memory, and in S3 mode every uploaded
    /// batch plus the marker that hides older entries everywhere (blocking).
    pub fn clear(&self, tenant: &str) -> crate::Result<()> {
        crate::store::lock(&self.tenants).remove(tenant);
        if let Some(bucket) = &self.bucket {
            let now = crate::time::now().timestamp_millis();
            bucket.delete(&marker_key(tenant))?;
            bucket.put_if_absent(&marker_key(tenant), now.to_string().into_bytes())?;
            let prefix = format!("tenants/{tenant}/journal/");
            for key in bucket.list_after(&prefix, &prefix, usize::MAX)? {
                bucket.delete(&key)?;
            }
        }
        Ok(())
    }

    /// Forgets a deleted tenant's entries here (its objects go with the tenant's).
    pub fn forget(&self, tenant: &str) {
        crate::store::lock(&self.tenants).remove(tenant);
    }
}

fn marker_key(tenant: &str) -> String {
    format!("tenants/{tenant}/journal-cleared")
}

/// When `tenant`'s journal was last cleared (ms since the epoch; 0: never).
fn cleared_at(bucket: &Bucket, tenant: &str) -> crate::Result<i64> {
    match bucket.get(&marker_key(tenant)) {
        Ok(body) => Ok(String::from_utf8_lossy(&body).trim().parse().unwrap_or(0)),
        Err(S3Error::NotFound) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// The headers of a request as the journal keeps them (secrets redacted).
pub fn headers(map: &http::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(name, value)| {
            let name = name.as_str().to_string();
            let value = if SECRET_HEADERS.contains(&name.as_str()) {
                REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name, value)
        })
        .collect()
}

/// A body as the journal keeps it: the first [`BODY_LIMIT`] bytes as text, JSON secrets
/// redacted; answers whether it was cut.
pub fn body(bytes: &[u8]) -> (String, bool) {
    let cut = &bytes[..bytes.len().min(BODY_LIMIT)];
    body_text(cut, bytes.len() > BODY_LIMIT)
}

/// [`body`] of the first [`BODY_LIMIT`] bytes of a body, `truncated` when it was longer.
fn body_text(bytes: &[u8], truncated: bool) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    // Only a body that names a secret member is parsed: most bodies are copied as they are,
    // which keeps the journal's cost on large bodies to a copy and one scan.
    let secret = looks_secret(&text);
    if !truncated && secret {
        if let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(bytes) {
            if redact(&mut json) {
                return (json.to_string(), false);
            }
        }
    }
    if truncated && secret {
        // A cut JSON document cannot be parsed to redact it member by member.
        return (
            format!("{REDACTED} (a truncated body naming a secret field)"),
            true,
        );
    }
    (text, truncated)
}

/// Replaces secret members anywhere in `v`; answers whether it replaced any.
fn redact(v: &mut serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(map) => {
            let mut any = false;
            for (k, val) in map.iter_mut() {
                if SECRET_FIELDS.iter().any(|s| s.eq_ignore_ascii_case(k)) {
                    *val = serde_json::Value::String(REDACTED.into());
                    any = true;
                } else {
                    any |= redact(val);
                }
            }
            any
        }
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |a, i| redact(i) | a),
        _ => false,
    }
}

/// Whether `text` may hold a secret JSON member: a quoted secret name, in any case. (Done
/// with std's precompiled byte routines: a large body costs one copy and a few scans.)
fn looks_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SECRET_ENDINGS.iter().any(|end| lower.contains(end))
}

/// How every name of [`SECRET_FIELDS`] ends, closing quote included: one scan per ending
/// finds them all (a false positive only costs a parse).
const SECRET_ENDINGS: &[&str] = &["token\"", "api_key\"", "password\"", "secret\""];

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, status: u16, body: &str) -> Raw {
        Raw {
            time: crate::time::now(),
            surface: "B",
            method: http::Method::GET,
            uri: path.parse().expect("uri"),
            headers: http::HeaderMap::new(),
            request_body: Some(Bytes::from(body.to_string())),
            status,
            duration_ms: 1.0,
            response_body: Bytes::new(),
            fault: None,
        }
    }

    #[test]
    fn retention_drops_the_oldest_by_count_and_bytes() {
        let settings = Settings {
            enabled: true,
            max_entries: 3,
            max_bytes: 10_000,
            flush_every: Duration::from_secs(1),
        };
        let j = Journal::new(settings, None);
        for i in 0..5 {
            j.record("t", entry(&format!("/p/{i}"), 200, ""));
        }
        let all = j.read("t", &Filter::default()).unwrap();
        let paths: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/p/4", "/p/3", "/p/2"]);
        j.record("t", entry("/big", 500, &"x".repeat(20_000)));
        let all = j.read("t", &Filter::default()).unwrap();
        assert_eq!(all.len(), 1, "the byte bound keeps only the newest");
        let filter = Filter {
            status: Some((500, 599)),
            ..Filter::default()
        };
        assert_eq!(j.read("t", &filter).unwrap().len(), 1);
    }

    #[test]
    fn entries_are_made_from_the_parts_when_read_with_the_same_rules() {
        let j = Journal::new(crate::config::DEFAULT_JOURNAL, None);
        let mut long = format!(
            "{{\"password\": \"p\", \"pad\": \"{}",
            "x".repeat(BODY_LIMIT)
        );
        long.push_str("\"}");
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", http::HeaderValue::from_static("Basic abc"));
        let mut raw = entry("/p?q=1", 201, "");
        raw.headers = headers;
        raw.request_body = None;
        raw.response_body = Bytes::from(long);
        j.record("t", raw);
        let read = j.read("t", &Filter::default()).unwrap();
        let e = &read[0];
        assert_eq!((e.path.as_str(), e.query.as_deref()), ("/p", Some("q=1")));
        assert_eq!(
            (e.request_body.as_str(), e.request_body_truncated),
            ("", true)
        );
        assert!(e.response_body_truncated);
        assert!(
            e.response_body.starts_with(REDACTED),
            "{}",
            &e.response_body[..40]
        );
        assert_eq!(
            e.request_headers,
            vec![("authorization".into(), REDACTED.into())]
        );
        assert!(e.id.contains(j.environment()) && e.time.ends_with('Z'));
        // Made once: a second read answers the same entry.
        let again = j.read("t", &Filter::default()).unwrap();
        assert!(Arc::ptr_eq(&read[0], &again[0]));
    }

    #[test]
    fn every_secret_field_has_an_ending_scanned_for() {
        for name in SECRET_FIELDS {
            assert!(
                looks_secret(&format!("{{\"{}\": 1}}", name.to_uppercase())),
                "{name}"
            );
        }
        assert!(!looks_secret(r#"{"tokens_used": 1, "name": "api"}"#));
    }

    #[test]
    fn secrets_are_redacted() {
        let (text, cut) = body(br#"{"access_token":"abc","nested":[{"Password":"p"}],"n":1}"#);
        assert!(!cut);
        assert!(!text.contains("abc") && !text.contains("\"p\""), "{text}");
        assert!(text.contains(REDACTED));
        let mut map = http::HeaderMap::new();
        map.insert("x-api-key", http::HeaderValue::from_static("sbx_secret"));
        map.insert("accept", http::HeaderValue::from_static("text/xml"));
        let kept = headers(&map);
        assert!(kept.contains(&("x-api-key".into(), REDACTED.into())));
        assert!(kept.contains(&("accept".into(), "text/xml".into())));
    }
}
