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
//! older than it, including ones still in other environments' memory ([`batches`]).
//!
//! Bounds ([`Settings`]: `max_entries`, `max_bytes`, per tenant) hold in three places: in
//! each environment's memory (oldest dropped first), in S3 (after each upload, the batches
//! beyond the bound, oldest first, are deleted: [`batches`]), and on every read (the newest
//! entries within both bounds, whatever the environments and batches hold). A tenant being
//! deleted is [`Journal::close`]d first: nothing more is recorded or uploaded for it, its
//! pending entries are dropped; an uploader asks whether the tenant is still alive (its
//! log's tombstone, see [`Journal::upload`]) before and after its PUT, so a batch never
//! stays behind a deletion, in this environment or another.
//!
//! Cost on the request path: the layer hands over the request's parts as they are ([`Raw`]:
//! the header map, the URI, the bodies as shared `Bytes`, no copy below [`BODY_LIMIT`]) and
//! one push under a lock. Everything else (the entry's id and time texts, the header list,
//! the bodies' text and the redaction) is done once per entry, later, by whoever needs the
//! entry first: a journal read or an upload ([`Item`]).
//!
//! Redaction ([`redact`]): secret headers, query parameters and JSON members by name.

mod batches;
pub mod redact;

pub use redact::{body, headers, REDACTED, SECRET_FIELDS, SECRET_HEADERS, UNPARSED};

use crate::store::s3::Bucket;
use bytes::Bytes;
use redact::body_text;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of each body kept.
pub const BODY_LIMIT: usize = 64 * 1024;
/// Entries uploaded at once at most (a fuller batch is uploaded before the interval ends).
pub const FLUSH_BATCH: usize = 200;
/// Batches of other environments read per journal read at most (newest first).
pub const MAX_BATCHES_READ: usize = 50;

/// One request as served; credentials and secrets redacted.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = JournalEntry)]
pub struct Entry {
    /// Unique and time-ordered: `<ms since epoch, 13 digits>-<environment>-<sequence>`.
    pub id: String,
    /// When the request arrived (real time, UTC).
    #[schema(format = DateTime)]
    pub time: String,
    /// The environment (process) that served it.
    pub environment: String,
    /// `A`, `B`, `C` or `admin`.
    #[schema(schema_with = surfaces)]
    pub surface: String,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string, if any.
    #[schema(required = true)]
    pub query: Option<String>,
    /// The status answered.
    #[schema(minimum = 100, maximum = 599)]
    pub status: u16,
    /// Time to the answer, in milliseconds.
    pub duration_ms: f64,
    /// Request headers, secrets redacted.
    #[schema(schema_with = crate::json_schema::string_pairs)]
    pub request_headers: Vec<(String, String)>,
    /// The request body's first 64 KiB (`BODY_LIMIT`; text, lossy UTF-8), secrets redacted.
    pub request_body: String,
    /// Whether the request body was longer (or not read: no length given).
    pub request_body_truncated: bool,
    /// The response body's first 64 KiB, secrets redacted.
    pub response_body: String,
    /// Whether the response body was longer.
    pub response_body_truncated: bool,
    /// The fault rule that answered (or delayed) it.
    #[schema(required = true)]
    pub fault: Option<String>,
}

fn surfaces() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(&["A", "B", "C", "admin"])
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
            query: parts.uri.query().map(redact::query),
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
    /// Memory the entry is counted for on a read: what [`Item`] counts for it.
    fn size(&self) -> usize {
        256 + self.path.len()
            + self.query.as_ref().map_or(0, String::len)
            + self.request_body.len()
            + self.response_body.len()
            + self
                .request_headers
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

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

/// When a tenant's pending entries are to be uploaded (S3 mode). The caller of
/// [`Journal::record`] calls [`Journal::upload`] once for each `Now` and `After` it gets (for
/// `After`, with [`Journal::take_pending`] once the wait is over): that is how
/// [`Journal::uploads_settled`] knows every scheduled upload has run.
#[derive(Debug)]
pub enum Flush {
    /// Not now: nothing to upload, or an upload is scheduled already.
    Nothing,
    /// This full batch, at once.
    Now(Vec<Arc<Item>>),
    /// Whatever is pending after this long ([`Journal::take_pending`]).
    After(Duration),
}

/// Most tenant ids remembered as closed (deleted): far more deletions than a process sees
/// within a flush interval, the only time a late upload can happen.
const MAX_CLOSED: usize = 10_000;

/// The journal of this environment.
pub struct Journal {
    settings: Settings,
    environment: String,
    bucket: Option<Bucket>,
    sequence: AtomicU64,
    tenants: Mutex<HashMap<String, Kept>>,
    /// Tenants being or having been deleted: nothing recorded or uploaded for them.
    closed: Mutex<HashSet<String>>,
    /// Uploads [`Journal::record`] scheduled, and [`Journal::upload`] calls that returned.
    uploads_scheduled: AtomicU64,
    uploads_finished: AtomicU64,
}

/// Counts a finished upload when dropped: on every return of [`Journal::upload`].
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
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
            closed: Mutex::default(),
            uploads_scheduled: AtomicU64::new(0),
            uploads_finished: AtomicU64::new(0),
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

    /// Whether every upload [`Journal::record`] scheduled so far has run: its PUT made (or
    /// failed) and its checks done, or nothing to upload found (a closed or deleted tenant).
    /// True without a bucket. A process about to stop can wait for it so that it loses no
    /// entry, and a reader of the bucket for it so that no upload lands after its read.
    pub fn uploads_settled(&self) -> bool {
        // Finished first: an upload scheduled in between makes the answer false, not wrong.
        let finished = self.uploads_finished.load(Ordering::SeqCst);
        finished >= self.uploads_scheduled.load(Ordering::SeqCst)
    }

    fn is_closed(&self, tenant: &str) -> bool {
        crate::store::lock(&self.closed).contains(tenant)
    }

    /// Records a request of `tenant` (nothing converted here: see [`Item`]), dropping its
    /// oldest entries past the bounds, and says when its pending entries are to be uploaded
    /// (S3 mode): the caller uploads off the request's path.
    pub fn record(&self, tenant: &str, raw: Raw) -> Flush {
        if self.is_closed(tenant) {
            return Flush::Nothing;
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
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
            self.uploads_scheduled.fetch_add(1, Ordering::SeqCst);
            return Flush::Now(std::mem::take(&mut kept.pending));
        }
        if kept.pending_since.is_some() {
            // An upload is scheduled already.
            return Flush::Nothing;
        }
        kept.pending_since = Some(Instant::now());
        self.uploads_scheduled.fetch_add(1, Ordering::SeqCst);
        Flush::After(self.settings.flush_every)
    }

    /// Uploads a batch of `tenant`'s entries (blocking: one PUT, then one LIST and the
    /// deletes of the batches beyond the bounds), the newest within the bounds. A failure
    /// loses the batch from the other environments' view only; this one still holds it in
    /// memory. Nothing is uploaded for a closed tenant, nor for one `alive` says was deleted
    /// (asked before the PUT and after it: a batch that landed while the tenant was being
    /// deleted, here or in another environment, is deleted again).
    pub fn upload(&self, tenant: &str, batch: &[Arc<Item>], alive: &dyn Fn() -> bool) {
        let _finished = Finished(&self.uploads_finished);
        let Some(bucket) = &self.bucket else {
            return;
        };
        if batch.is_empty() || self.is_closed(tenant) {
            return;
        }
        if !alive() {
            self.close(tenant);
            return;
        }
        let within = self.within_bounds(batch.iter().rev(), |i| i.size);
        let entries: Vec<Arc<Entry>> = batch[batch.len() - within..]
            .iter()
            .map(|i| i.entry(&self.environment))
            .collect();
        let Some(key) = batches::upload(bucket, tenant, &entries) else {
            return;
        };
        // The tenant's deletion may have listed its objects before this one landed.
        if self.is_closed(tenant) || !alive() {
            self.close(tenant);
            let _ = bucket.delete(&key);
            return;
        }
        batches::prune(bucket, tenant, &self.settings);
    }

    /// How many of `items` (newest first) fit the bounds: at most `max_entries`, and at most
    /// `max_bytes` by `size` (the newest always, as memory keeps it).
    fn within_bounds<T>(
        &self,
        items: impl Iterator<Item = T>,
        size: impl Fn(&T) -> usize,
    ) -> usize {
        let mut bytes = 0usize;
        let mut count = 0;
        for item in items.take(self.settings.max_entries) {
            bytes = bytes.saturating_add(size(&item));
            if count > 0 && bytes > self.settings.max_bytes {
                break;
            }
            count += 1;
        }
        count
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

    /// The entries of `tenant` that `filter` keeps, newest first, within the bounds (at most
    /// `max_entries`, at most `max_bytes`): this environment's memory merged (S3 mode) with
    /// the uploaded batches of every environment (blocking: one LIST and the GETs of the
    /// newest batches up to the bounds, at most [`MAX_BATCHES_READ`]), hidden before the
    /// last clear.
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
            cleared_ms = batches::cleared_at(bucket, tenant)?;
            for e in batches::read(bucket, tenant, &self.settings)? {
                all.entry(e.id.clone()).or_insert_with(|| Arc::new(e));
            }
        }
        let mut kept: Vec<Arc<Entry>> = all
            .into_values()
            .filter(|e| e.millis() >= cleared_ms && filter.keeps(e))
            .collect();
        kept.sort_by(|a, b| b.id.cmp(&a.id));
        let within = self.within_bounds(kept.iter(), |e| e.size());
        kept.truncate(within);
        Ok(kept)
    }

    /// Clears `tenant`'s journal: this environment's memory, and in S3 mode every uploaded
    /// batch plus the marker that hides older entries everywhere (blocking).
    pub fn clear(&self, tenant: &str) -> crate::Result<()> {
        crate::store::lock(&self.tenants).remove(tenant);
        if let Some(bucket) = &self.bucket {
            batches::clear(bucket, tenant)?;
        }
        Ok(())
    }

    /// Closes a tenant about to be deleted: its entries here (pending ones included) are
    /// dropped, and nothing more is recorded or uploaded for it (its objects go with the
    /// tenant's). Called before the deletion, so that an upload racing it sees it closed
    /// once its batch has landed, and deletes it.
    pub fn close(&self, tenant: &str) {
        let mut closed = crate::store::lock(&self.closed);
        if closed.len() >= MAX_CLOSED {
            closed.clear();
        }
        closed.insert(tenant.to_string());
        drop(closed);
        crate::store::lock(&self.tenants).remove(tenant);
    }

    /// Undoes [`Journal::close`] when the deletion failed: the tenant is recorded again.
    pub fn reopen(&self, tenant: &str) {
        crate::store::lock(&self.closed).remove(tenant);
    }
}

#[cfg(test)]
mod tests;
