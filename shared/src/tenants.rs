//! Tenant lifecycle: create (register, then seed), reset, delete. Used by the admin API and
//! by the local server's first start.

use crate::auth::{jwt, Credentials};
use crate::seed::{self, Seed};
use crate::store::{Store, TenantRecord};
use crate::{Error, Result};

/// Longest tenant name accepted.
pub const MAX_NAME_LEN: usize = 64;
/// Longest token lifetime the admin API issues: 30 days.
pub const MAX_TOKEN_TTL_SECONDS: i64 = 30 * 24 * 3600;
/// Token lifetime when none is asked for: one hour.
pub const DEFAULT_TOKEN_TTL_SECONDS: i64 = 3600;

/// Checks a tenant name: 1..64 of `A-Z a-z 0-9 - _ .`, so it is usable as a Basic username.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::bad_request(format!(
            "name must be 1 to {MAX_NAME_LEN} characters of A-Z, a-z, 0-9, '-', '_' or '.'"
        )))
    }
}

/// Registers a tenant and loads its seed; if seeding fails the registration is undone.
pub async fn create(
    store: &Store,
    name: &str,
    seed: Seed,
    time_zone: &str,
) -> Result<(TenantRecord, Credentials)> {
    check_name(name)?;
    let tz = crate::time::parse_tz(time_zone).ok_or_else(|| {
        Error::bad_request(format!("time_zone: '{time_zone}' is not an IANA time zone"))
    })?;
    let (record, creds) = store.registry().create_tenant(name, time_zone)?;
    let seeded = async {
        let db = store.tenant_db(&record.id)?;
        db.write(move |tx| seed::apply(tx, seed, tz)).await
    }
    .await;
    if let Err(e) = seeded {
        let _ = store.registry().delete(&record.id);
        let _ = store.drop_tenant_db(&record.id);
        return Err(e);
    }
    Ok((record, creds))
}

/// Replaces all data of a tenant with `seed`; credentials are kept.
pub async fn reset(store: &Store, id: &str, seed: Seed) -> Result<TenantRecord> {
    let record = get(store, id)?;
    let tz = crate::time::parse_tz(&record.time_zone).unwrap_or(chrono_tz::UTC);
    let db = store.tenant_db(&record.id)?;
    db.write(move |tx| seed::reset(tx, seed, tz)).await?;
    Ok(record)
}

/// Deletes a tenant's credentials and data.
pub fn delete(store: &Store, id: &str) -> Result<()> {
    if !store.registry().delete(id)? {
        return Err(Error::not_found(format!("tenant {id} does not exist")));
    }
    store.drop_tenant_db(id)
}

/// A registered tenant, or 404.
pub fn get(store: &Store, id: &str) -> Result<TenantRecord> {
    store
        .registry()
        .get(id)?
        .ok_or_else(|| Error::not_found(format!("tenant {id} does not exist")))
}

/// Issues a bearer token for a tenant, valid `ttl_seconds` (1 to 30 days' worth).
pub fn issue_token(store: &Store, id: &str, ttl_seconds: i64) -> Result<String> {
    if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&ttl_seconds) {
        return Err(Error::bad_request(format!(
            "ttl_seconds must be 1 to {MAX_TOKEN_TTL_SECONDS}"
        )));
    }
    let record = get(store, id)?;
    let now = crate::time::now().timestamp();
    let claims = jwt::Claims {
        sub: record.id.clone(),
        iat: now,
        exp: now + ttl_seconds,
        iss: jwt::ISSUER.to_string(),
    };
    let key = jwt::tenant_key(&store.registry().jwt_master_secret()?, &record.id);
    Ok(jwt::encode(&claims, &key))
}
