//! Servers starting at once on one data directory: what one of them does when it starts
//! (open the store, read the token secret, register a tenant and open its database), run
//! from threads by `tests/store/open_race.rs` and from processes by the `open_store` binary,
//! so that both race through exactly the same steps.

use shared::store::Store;
use shared::Error;
use std::path::Path;

/// The tenant every opener tries to register; one wins, the others find it.
pub const SHARED_TENANT: &str = "shared";

/// What one opener saw: the token secret (hex) and the id of the shared tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The data dir's token secret, as the store read or created it.
    pub secret: String,
    /// The id of [`SHARED_TENANT`], registered by whichever opener came first.
    pub tenant: String,
}

/// Opens the store at `data_dir` as a starting server does and opens the shared tenant's
/// database (migrating it if this opener is first). Every failure is an `Err` naming its
/// step, never a panic, so that a caller can count them.
pub fn open_once(data_dir: &Path) -> Result<Opened, String> {
    let store = Store::open_with(data_dir, None).map_err(|e| format!("open: {e}"))?;
    let secret = store
        .local_token_secret()
        .map_err(|e| format!("token secret: {e}"))?;
    let registry = store.registry();
    match registry.create_tenant(SHARED_TENANT, "UTC") {
        Ok(_) | Err(Error::Conflict(_)) => {}
        Err(e) => return Err(format!("register: {e}")),
    }
    let tenant = registry
        .list()
        .map_err(|e| format!("list: {e}"))?
        .into_iter()
        .find(|t| t.name == SHARED_TENANT)
        .ok_or("the shared tenant is not registered")?;
    let db = store
        .tenant_db(&tenant.id)
        .map_err(|e| format!("tenant database: {e}"))?;
    db.read_blocking(|c| {
        Ok(c.query_row("SELECT count(*) FROM ledgers", [], |r| r.get::<_, i64>(0))?)
    })
    .map_err(|e| format!("tenant read: {e}"))?;
    Ok(Opened {
        secret: secret.iter().map(|b| format!("{b:02x}")).collect(),
        tenant: tenant.id,
    })
}
