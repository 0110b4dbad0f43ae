//! Which agreement service and billing period an event rates against: the rateable
//! agreement services carrying its SRID (latest start first), the one holding its start
//! (or why none does: before its start, after its end, inactive, unknown), and the billing
//! period holding the start; each loaded into the call's [`Catalogue`] on first use.

use super::catalogue::Catalogue;
use super::Erred;
use crate::domain::agreements::{AgreementServiceStatus, ResourceStatus};
use crate::domain::usage::{ErredCode, RATEABLE_STATUSES};
use crate::{Error, Result};
use rusqlite::Transaction;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// The service an SRID rates against.
pub(super) struct ServiceRef {
    pub(super) service_id: i64,
    pub(super) agreement_service_id: i64,
    pub(super) service_resource_id: i64,
    pub(super) billing_account_id: i64,
    pub(super) product_id: i64,
    pub(super) currency: String,
    pub(super) start: String,
    pub(super) end: Option<String>,
}

/// The agreement service an event of `srid` starting at `start` rates against.
pub(super) fn resolve_service(
    tx: &Transaction<'_>,
    catalogue: &mut Catalogue,
    srid: &str,
    at: &str,
) -> Result<std::result::Result<Arc<ServiceRef>, Erred>> {
    if !catalogue.services.contains_key(srid) {
        let found = load_services(tx, srid)?;
        catalogue.services.insert(srid.to_string(), found);
    }
    let candidates = match catalogue.services.get(srid) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return Ok(Err(e.clone())),
        None => return Err(Error::Internal("service cache lost an entry".into())),
    };
    let holds =
        |s: &Arc<ServiceRef>| s.start.as_str() <= at && s.end.as_deref().is_none_or(|e| at < e);
    if let Some(s) = candidates.iter().find(|s| holds(s)) {
        return Ok(Ok(s.clone()));
    }
    // Candidates are ordered by start, latest first: report against the nearest one.
    let before = candidates.iter().all(|s| at < s.start.as_str());
    let Some(nearest) = candidates
        .iter()
        .find(|s| at >= s.start.as_str())
        .or(candidates.last())
    else {
        return Err(Error::Internal("no candidate service".into()));
    };
    let (code, what, when) = if before {
        (ErredCode::BeforeServiceStart, "starts", &nearest.start)
    } else {
        (
            ErredCode::AfterServiceEnd,
            "ended",
            nearest.end.as_ref().unwrap_or(&nearest.start),
        )
    };
    Ok(Err((
        code,
        format!("the event starts at {at}, but the service of '{srid}' {what} at {when}"),
    )))
}

/// Every rateable agreement service carrying `srid`, latest start first; or why none is.
fn load_services(
    tx: &Transaction<'_>,
    srid: &str,
) -> Result<std::result::Result<Vec<Arc<ServiceRef>>, Erred>> {
    let mut stmt = tx.prepare_cached(
        "SELECT sr.status, a.status, s.id, a.id, sr.id, s.billing_account_id, s.product_id,
                ba.currency_code, a.start_date, a.end_date
         FROM service_resources sr
         JOIN services s ON s.id = sr.service_id
         JOIN agreement_services a ON a.service_id = s.id
         JOIN billing_accounts ba ON ba.id = s.billing_account_id
         WHERE sr.identifier = ?1
         ORDER BY a.start_date DESC, a.id DESC",
    )?;
    let rows = stmt
        .query_map([srid], |r| {
            let resource_status: ResourceStatus = r.get(0)?;
            let service_status: AgreementServiceStatus = r.get(1)?;
            let active = resource_status == ResourceStatus::Active
                && RATEABLE_STATUSES.contains(&service_status.as_str());
            Ok((
                active,
                ServiceRef {
                    service_id: r.get(2)?,
                    agreement_service_id: r.get(3)?,
                    service_resource_id: r.get(4)?,
                    billing_account_id: r.get(5)?,
                    product_id: r.get(6)?,
                    currency: r.get(7)?,
                    start: r.get(8)?,
                    end: r.get(9)?,
                },
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if rows.is_empty() {
        return Ok(Err((
            ErredCode::UnknownServiceResource,
            format!("no service carries the service_resource_identifier '{srid}'"),
        )));
    }
    let active: Vec<Arc<ServiceRef>> = rows
        .into_iter()
        .filter(|(a, _)| *a)
        .map(|(_, s)| Arc::new(s))
        .collect();
    if active.is_empty() {
        return Ok(Err((
            ErredCode::InactiveServiceResource,
            format!(
                "the service_resource_identifier '{srid}' is inactive or its agreement service is not {}",
                RATEABLE_STATUSES.join(" or ")
            ),
        )));
    }
    Ok(Ok(active))
}

/// The billing period of a service holding `at` (stored text): the latest starting at or
/// before `at` that ends after it (of periods starting together, the last made), as
/// `SELECT id FROM service_periods WHERE service_id = ? AND start_date <= at AND at <
/// end_date ORDER BY start_date DESC LIMIT 1` would find it. A service's periods load
/// once into the catalogue (one indexed range of service_periods_service), then every start
/// is a binary search.
pub(super) fn service_period(
    tx: &Transaction<'_>,
    catalogue: &mut Catalogue,
    service_id: i64,
    at: &str,
) -> Result<Option<i64>> {
    let periods = match catalogue.periods.entry(service_id) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => e.insert(
            tx.prepare_cached(
                "SELECT id, start_date, end_date FROM service_periods
                 WHERE service_id = ?1 ORDER BY start_date, id",
            )?
            .query_map([service_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<(i64, String, String)>>>()?,
        ),
    };
    // Those starting at or before `at`, then the latest of them that ends after it.
    let starting = periods.partition_point(|(_, start, _)| start.as_str() <= at);
    Ok(periods[..starting]
        .iter()
        .rev()
        .find(|(_, _, end)| at < end.as_str())
        .map(|(id, _, _)| *id))
}
