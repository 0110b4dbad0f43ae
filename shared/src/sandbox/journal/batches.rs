//! The journal's batches in S3 (S3 mode): one object per upload under
//! `tenants/<id>/journal/`, named `<first entry id>.<entries>.<bytes>.json` so that a LIST
//! alone tells how many entries and bytes each holds (ids are time-ordered, so key order is
//! age order); the clear marker `tenants/<id>/journal-cleared`.
//!
//! Invariants: after each upload the tenant's batches are pruned to the bounds (the newest
//! batches within `max_entries` and `max_bytes` together, a batch's bytes counted as memory
//! and reads count its entries, not as encoded; the newest one always kept), so the S3 footprint of a tenant's journal stays about the bound however
//! many requests it receives; a read fetches the newest batches only up to the bounds. A
//! batch named in the older form (`<id>.json`, no counts) counts as full, so it goes first.

use super::{Entry, Settings, FLUSH_BATCH, MAX_BATCHES_READ};
use crate::store::s3::{Bucket, S3Error};
use std::sync::Arc;

fn prefix(tenant: &str) -> String {
    format!("tenants/{tenant}/journal/")
}

fn marker_key(tenant: &str) -> String {
    format!("tenants/{tenant}/journal-cleared")
}

/// The entries and bytes a batch holds, from its key (`None` for the older form).
fn counts(key: &str) -> Option<(usize, usize)> {
    let name = key.rsplit('/').next()?.strip_suffix(".json")?;
    let mut parts = name.rsplitn(3, '.');
    let bytes = parts.next()?.parse().ok()?;
    let entries = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((entries, bytes))
}

/// The batches of `tenant` (newest first) with what each holds, an older-form key counted
/// as full.
fn listed(
    bucket: &Bucket,
    tenant: &str,
    settings: &Settings,
) -> Result<Vec<(String, usize, usize)>, S3Error> {
    let prefix = prefix(tenant);
    let mut keys = bucket.list_after(&prefix, &prefix, usize::MAX)?;
    keys.reverse();
    Ok(keys
        .into_iter()
        .map(|key| {
            let (entries, bytes) = counts(&key).unwrap_or((FLUSH_BATCH, settings.max_bytes));
            (key, entries, bytes)
        })
        .collect())
}

/// How many of `batches` (newest first) are within the bounds together, the newest always.
fn within(batches: &[(String, usize, usize)], settings: &Settings) -> usize {
    let (mut entries, mut bytes) = (0usize, 0usize);
    let mut count = 0;
    for (_, e, b) in batches {
        entries = entries.saturating_add(*e);
        bytes = bytes.saturating_add(*b);
        if count > 0 && (entries > settings.max_entries || bytes > settings.max_bytes) {
            break;
        }
        count += 1;
    }
    count
}

/// Uploads `entries` as one batch of `tenant`; answers its key once stored (a failure is
/// logged: the batch then stays in this environment's memory only).
pub(super) fn upload(bucket: &Bucket, tenant: &str, entries: &[Arc<Entry>]) -> Option<String> {
    let first = entries.first()?;
    let entries: Vec<&Entry> = entries.iter().map(|e| e.as_ref()).collect();
    let body = match serde_json::to_vec(&entries) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(tenant, error = %e, "journal batch not encoded");
            return None;
        }
    };
    // What the entries hold by the journal's one measure (memory and reads count the same),
    // not the encoded body, which JSON escaping makes larger: counted by that, S3 kept far
    // fewer entries than the bound lets memory keep.
    let size: usize = entries.iter().map(|e| e.size()).sum();
    let key = format!(
        "{}{}.{}.{}.json",
        prefix(tenant),
        first.id,
        entries.len(),
        size
    );
    match bucket.put_if_absent(&key, body) {
        Ok(()) => Some(key),
        Err(e) => {
            tracing::warn!(tenant, error = %e, "journal batch not uploaded");
            None
        }
    }
}

/// Deletes `tenant`'s batches beyond the bounds, oldest first (a failure is logged: the next
/// upload prunes again).
pub(super) fn prune(bucket: &Bucket, tenant: &str, settings: &Settings) {
    let batches = match listed(bucket, tenant, settings) {
        Ok(batches) => batches,
        Err(e) => {
            tracing::warn!(tenant, error = %e, "journal batches not listed for pruning");
            return;
        }
    };
    let keep = within(&batches, settings);
    for (key, _, _) in &batches[keep..] {
        if let Err(e) = bucket.delete(key) {
            tracing::warn!(tenant, key, error = %e, "journal batch not pruned");
        }
    }
}

/// The entries of `tenant`'s newest batches, up to the bounds and [`MAX_BATCHES_READ`].
pub(super) fn read(
    bucket: &Bucket,
    tenant: &str,
    settings: &Settings,
) -> crate::Result<Vec<Entry>> {
    let batches = listed(bucket, tenant, settings)?;
    let keep = within(&batches, settings).min(MAX_BATCHES_READ);
    let mut out = Vec::new();
    for (key, _, _) in &batches[..keep] {
        let body = match bucket.get(key) {
            Ok(body) => body,
            Err(S3Error::NotFound) => continue,
            Err(e) => return Err(e.into()),
        };
        match serde_json::from_slice::<Vec<Entry>>(&body) {
            Ok(batch) => out.extend(batch),
            Err(_) => tracing::warn!(key, "unreadable journal batch skipped"),
        }
    }
    Ok(out)
}

/// Deletes every batch of `tenant` and writes the marker that hides older entries.
pub(super) fn clear(bucket: &Bucket, tenant: &str) -> crate::Result<()> {
    let now = crate::time::now().timestamp_millis();
    bucket.delete(&marker_key(tenant))?;
    bucket.put_if_absent(&marker_key(tenant), now.to_string().into_bytes())?;
    let prefix = prefix(tenant);
    for key in bucket.list_after(&prefix, &prefix, usize::MAX)? {
        bucket.delete(&key)?;
    }
    Ok(())
}

/// When `tenant`'s journal was last cleared (ms since the epoch; 0: never).
pub(super) fn cleared_at(bucket: &Bucket, tenant: &str) -> crate::Result<i64> {
    match bucket.get(&marker_key(tenant)) {
        Ok(body) => Ok(String::from_utf8_lossy(&body).trim().parse().unwrap_or(0)),
        Err(S3Error::NotFound) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_what_a_batch_holds_and_the_newest_within_the_bounds_are_kept() {
        assert_eq!(
            counts("tenants/t_1/journal/0001764000000000-abc-00000001.200.12345.json"),
            Some((200, 12345))
        );
        assert_eq!(
            counts("tenants/t_1/journal/0001764000000000-abc-00000001.json"),
            None
        );
        let settings = Settings {
            enabled: true,
            max_entries: 10,
            max_bytes: 1000,
            flush_every: std::time::Duration::from_secs(1),
        };
        let b = |e, by| (String::new(), e, by);
        assert_eq!(within(&[b(4, 100), b(4, 100), b(4, 100)], &settings), 2);
        assert_eq!(within(&[b(1, 600), b(1, 600)], &settings), 1);
        assert_eq!(within(&[b(50, 5000)], &settings), 1, "the newest always");
        assert_eq!(within(&[], &settings), 0);
    }
}
