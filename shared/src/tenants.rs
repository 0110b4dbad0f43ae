//! Tenant lifecycle: create (register, then seed), reset, delete. Used by the admin API and
//! by the local server's first start. The async functions run their registry and store
//! calls (blocking S3 and SQLite work) on the blocking pool, never on an async worker.
//!
//! Deletion order (S3 mode): tombstone, registry entry, objects. The tombstone comes first so
//! that every environment stops serving the tenant and appending to it at its next freshness
//! check, before anything it could still read disappears.

use crate::auth::{jwt, Credentials};
use crate::fixtures::{self, Seed};
use crate::store::{blocking, Store, TenantRecord};
use crate::{Error, Result};

/// Longest tenant name accepted.
pub const MAX_NAME_LEN: usize = crate::names::MAX_LEN;
/// Longest token lifetime the admin API issues: 30 days.
pub const MAX_TOKEN_TTL_SECONDS: i64 = 30 * 24 * 3600;
/// Token lifetime when none is asked for: one hour.
pub const DEFAULT_TOKEN_TTL_SECONDS: i64 = 3600;

/// Checks a tenant name: [`crate::names::is_plain`], so it is usable as a Basic username.
pub fn check_name(name: &str) -> Result<()> {
    if crate::names::is_plain(name) {
        Ok(())
    } else {
        Err(Error::bad_request(format!(
            "name must be {}",
            crate::names::RULE
        )))
    }
}

/// The tenant's int64 number, where an interface types the tenant as an int64 (Surface C's
/// collector runs): the first 63 bits of the SHA-256 of its id, so it is stable across
/// environments and restarts without being stored, positive, and distinct per tenant (a
/// collision needs about 3 * 10^9 tenants to become likely).
pub fn number(id: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Shifting out one bit keeps it within i64; 0 is kept for "none" by no one, but a
    // positive number reads better.
    i64::try_from(u64::from_be_bytes(first) >> 1)
        .unwrap_or(i64::MAX)
        .max(1)
}

/// Registers a tenant and loads its seed; if seeding fails the registration is undone.
/// `before` runs first in the seed's transaction (the admin API sets the tenant's clock
/// there, so that the seed's relative dates resolve against it).
pub async fn create(
    store: &Store,
    name: &str,
    seed: Seed,
    time_zone: &str,
    before: impl Fn(&rusqlite::Transaction<'_>) -> Result<()> + Send + 'static,
) -> Result<(TenantRecord, Credentials)> {
    check_name(name)?;
    let tz = crate::time::parse_tz(time_zone).ok_or_else(|| {
        Error::bad_request(format!(
            "time_zone: {} is not an IANA time zone",
            crate::error::quoted(time_zone)
        ))
    })?;
    let (st, name, zone) = (store.clone(), name.to_string(), time_zone.to_string());
    // An admin request with an Idempotency-Key: its row joins the registration.
    let key = registry_key();
    let (record, creds) = blocking(move || {
        st.registry()
            .create_tenant_keyed(&name, &zone, key.as_deref())
    })
    .await?;
    let (st, id) = (store.clone(), record.id.clone());
    let seeded = blocking(move || {
        st.tenant_db(&id)?.write_blocking(move |tx| {
            before(tx)?;
            fixtures::apply(tx, seed.clone(), tz)
        })
    })
    .await;
    if let Err(e) = seeded {
        let (st, id) = (store.clone(), record.id.clone());
        let _ = blocking(move || {
            let _ = st.registry().unregister(&id);
            st.drop_tenant_db(&id)
        })
        .await;
        return Err(e);
    }
    Ok((record, creds))
}

/// What [`create`] would do, rehearsed (a dry run): the name, the time zone and the name's
/// freedom are checked, and `before` and the seed run in a database that lives in memory and
/// is dropped after. Nothing is registered; answers what the seed would write.
pub async fn rehearse_create(
    store: &Store,
    name: &str,
    seed: Seed,
    time_zone: &str,
    before: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()> + Send + 'static,
) -> Result<fixtures::Changes> {
    check_name(name)?;
    let tz = crate::time::parse_tz(time_zone).ok_or_else(|| {
        Error::bad_request(format!(
            "time_zone: {} is not an IANA time zone",
            crate::error::quoted(time_zone)
        ))
    })?;
    if list(store).await?.iter().any(|t| t.name == name) {
        return Err(Error::conflict(format!(
            "a tenant named '{name}' already exists"
        )));
    }
    store
        .rehearse_new_tenant(move |tx| {
            before(tx)?;
            fixtures::apply(tx, seed, tz)
        })
        .await
}

/// Replaces all data of a tenant with `seed`; credentials are kept. An admin request's
/// Idempotency-Key joins the reset's transaction (`TenantDb::write`).
pub async fn reset(store: &Store, id: &str, seed: Seed) -> Result<TenantRecord> {
    let record = get(store, id).await?;
    let tz = crate::time::parse_tz(&record.time_zone).unwrap_or(chrono_tz::UTC);
    let (st, tenant_id) = (store.clone(), record.id.clone());
    let db = blocking(move || st.tenant_db(&tenant_id)).await?;
    db.write(move |tx| fixtures::reset(tx, seed.clone(), tz))
        .await?;
    Ok(record)
}

/// Deletes a tenant: its tombstone first (S3 mode), then its credentials, then its data
/// (database, snapshots, exports; local and S3). Safe to retry after a failure at any step.
pub async fn delete(store: &Store, id: &str) -> Result<()> {
    let (st, id) = (store.clone(), id.to_string());
    let key = registry_key();
    blocking(move || {
        get_blocking(&st, &id)?;
        st.tombstone_tenant(&id)?;
        st.registry().delete_keyed(&id, key.as_deref())?;
        st.drop_tenant_db(&id)
    })
    .await
}

/// The idempotency key of the current admin request, when the registry keeps it (see
/// `store::idempotency::REGISTRY`).
pub fn registry_key() -> Option<std::sync::Arc<crate::store::idempotency::KeyScope>> {
    crate::store::idempotency::current_for(crate::store::idempotency::REGISTRY)
}

/// The idempotency key of the current admin request, when tenant `tenant_id`'s database
/// keeps it (a write under `/tenants/{id}/`; see `web::idempotency::prepare_admin`).
pub fn tenant_key(tenant_id: &str) -> Option<std::sync::Arc<crate::store::idempotency::KeyScope>> {
    crate::store::idempotency::current_for(tenant_id)
}

/// Every tenant, oldest first.
pub async fn list(store: &Store) -> Result<Vec<TenantRecord>> {
    let st = store.clone();
    blocking(move || st.registry().list()).await
}

/// A registered tenant, or 404.
pub async fn get(store: &Store, id: &str) -> Result<TenantRecord> {
    let (st, id) = (store.clone(), id.to_string());
    blocking(move || get_blocking(&st, &id)).await
}

fn get_blocking(store: &Store, id: &str) -> Result<TenantRecord> {
    store
        .registry()
        .get(id)?
        .ok_or_else(|| Error::not_found(format!("tenant {id} does not exist")))
}

/// Issues a bearer token for a tenant, valid `ttl_seconds` (1 to 30 days' worth), signed
/// with the tenant's key derived from `secret` (the configured token secret).
pub async fn issue_token(
    store: &Store,
    secret: &[u8],
    id: &str,
    ttl_seconds: i64,
) -> Result<String> {
    if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&ttl_seconds) {
        return Err(Error::bad_request(format!(
            "ttl_seconds must be 1 to {MAX_TOKEN_TTL_SECONDS}"
        )));
    }
    let record = get(store, id).await?;
    let now = crate::time::now().timestamp();
    let claims = jwt::Claims {
        sub: record.id.clone(),
        iat: now,
        exp: now + ttl_seconds,
        iss: jwt::ISSUER.to_string(),
    };
    let key = jwt::tenant_key(secret, &record.id);
    Ok(jwt::encode(&claims, &key))
}
