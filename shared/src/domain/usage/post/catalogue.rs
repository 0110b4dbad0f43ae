//! The rating catalogue as posting reads it: the rateable services of each SRID, the billing
//! periods of each service, the rate plan of each product and the charge categories, each
//! loaded from the tenant's tables on first use.
//!
//! Kept across calls: a post asks the store for the tenant's catalogue inside its write
//! ([`crate::store::write_memo`], scope [`MemoScope::Catalogue`]), which keeps it for as long
//! as no row it was loaded from changes (the store watches the tables and columns it reads;
//! the store's `CATALOGUE_COLUMNS` names them, and a new read here must be added there). So a
//! stream of posts against an unchanged catalogue looks each SRID, service, product and
//! category up once, not once per call. Where the store keeps nothing (S3 mode, where
//! another environment may have changed the tables; or a write that changed one of them
//! before posting), the call gets a catalogue of its own, as before.
//!
//! Invariants: it is filled only from the writer's transaction of the version it is kept
//! for (the writer lock is held while it is used), so it never holds what that version does
//! not; and it stays small: past [`MAX_ENTRIES`] loaded items it is emptied before a call.

use super::services::ServiceRef;
use super::Erred;
use crate::domain::usage::rate_plan::RatePlans;
use crate::domain::usage::ChargeCategoryRef;
use crate::store::{write_memo, MemoScope};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Most items (SRIDs, periods, rules, categories) a kept catalogue holds before a call
/// empties it: a tenant posting against an unchanged catalogue loads its live part again,
/// and garbage SRIDs (each answered UNKNOWN_SERVICE_RESOURCE, and remembered as such) cannot
/// grow it without bound.
pub(super) const MAX_ENTRIES: usize = 20_000;

/// The store's key of the kept catalogue.
const KEY: &str = "usage.post.catalogue";

/// What a post has loaded of the catalogue.
#[derive(Default)]
pub(super) struct Catalogue {
    /// The rateable services of each SRID, latest start first, or why none is.
    pub(super) services: HashMap<String, std::result::Result<Vec<Arc<ServiceRef>>, Erred>>,
    /// The billing periods of each service (id, start, end as stored), by start then id.
    pub(super) periods: HashMap<i64, Vec<(i64, String, String)>>,
    pub(super) plans: RatePlans,
    /// Charge categories by id, as a rated event's charges embed them.
    pub(super) categories: HashMap<i64, Arc<ChargeCategoryRef>>,
}

impl Catalogue {
    /// How many items it holds (see [`MAX_ENTRIES`]).
    fn entries(&self) -> usize {
        let periods: usize = self.periods.values().map(Vec::len).sum();
        self.services.len() + periods + self.plans.entries() + self.categories.len()
    }
}

/// The catalogue for a call running in the current write: the tenant's kept one, or one of
/// the call's own where the store keeps none. Lock it for the call (only the writer uses a
/// kept one, so the lock is never waited for) with [`lock_for_call`].
pub(super) fn for_this_write() -> Arc<Mutex<Catalogue>> {
    write_memo(MemoScope::Catalogue, KEY, || {
        Mutex::new(Catalogue::default())
    })
    .unwrap_or_else(|| Arc::new(Mutex::new(Catalogue::default())))
}

/// Locks `catalogue` for a call, emptied first if it has grown past [`MAX_ENTRIES`].
pub(super) fn lock_for_call(catalogue: &Mutex<Catalogue>) -> MutexGuard<'_, Catalogue> {
    let mut guard = crate::store::lock(catalogue);
    if guard.entries() > MAX_ENTRIES {
        *guard = Catalogue::default();
    }
    guard
}
