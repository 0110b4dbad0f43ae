//! The state every handler shares ([`AppState`]: the store, the configuration, the powers'
//! process state) and the one place a credential becomes a tenant ([`AppState::identify`]).
//!
//! Invariant: a tenant is looked up from a request's credential once, by the pipeline
//! (`super::pipeline`), before any body is read; handlers take the [`Identity`] it left in
//! the request's extensions and never look again.

use super::surface::Credential;
use crate::auth::jwt;
use crate::config::Config;
use crate::store::{Store, TenantDb, TenantRecord};
use crate::Error;
use chrono_tz::Tz;
use std::sync::Arc;

/// State shared by every handler of every route group.
#[derive(Clone)]
pub struct AppState {
    /// The tenant store.
    pub store: Store,
    /// Process configuration.
    pub config: Arc<Config>,
    /// The sandbox powers' state of this process (journal, fault draws).
    pub powers: Arc<crate::sandbox::Powers>,
    /// The admission shares of this process (see `super::pipeline`).
    pub(crate) admission: Arc<super::pipeline::Admission>,
    /// The idempotency keys in flight in this process (see `super::idempotency`).
    pub(crate) idempotency: Arc<super::idempotency::InFlight>,
}

/// Who a request is, as the pipeline found it from its headers.
#[derive(Clone)]
pub enum Identity {
    /// No credential its surface reads (public documents, unknown paths).
    Anonymous,
    /// A tenant's valid credential.
    Tenant(Tenant),
    /// The configured admin key.
    Admin,
}

impl AppState {
    /// Opens the store named by `config` (local, or S3 when `config.s3` is set) and checks
    /// that a token secret is available (configured, or kept in the data dir).
    pub fn new(config: Config) -> crate::Result<AppState> {
        let store = Store::open_with(&config.data_dir, config.s3.clone())?;
        let state = AppState::from_parts(store, config);
        if state.config.s3.is_some() && state.config.token_secret.is_none() {
            tracing::warn!(
                "SANDBOX_TOKEN_SECRET is unset: tokens are signed with a secret kept in this data \
                 dir, so other servers on the same bucket refuse them"
            );
        }
        state.token_secret()?;
        Ok(state)
    }

    /// The state of a process serving `store` with `config` (the store already open).
    pub fn from_parts(store: Store, config: Config) -> AppState {
        let powers = crate::sandbox::Powers::new(config.journal, store.bucket());
        store.registry().set_max_tenants(config.max_tenants);
        super::surface::set_xml_namespace(config.xml_namespace.as_deref());
        AppState {
            store,
            admission: Arc::new(super::pipeline::Admission::new(&config)),
            idempotency: Arc::default(),
            config: Arc::new(config),
            powers: Arc::new(powers),
        }
    }

    /// The master secret bearer tokens are signed with: `SANDBOX_TOKEN_SECRET` when
    /// configured, else the one kept in the data dir (never the registry or the bucket).
    pub fn token_secret(&self) -> crate::Result<Vec<u8>> {
        match &self.config.token_secret {
            Some(s) if s.len() >= crate::config::MIN_TOKEN_SECRET_LEN => Ok(s.as_bytes().to_vec()),
            Some(_) => Err(Error::Internal(format!(
                "SANDBOX_TOKEN_SECRET must be at least {} characters",
                crate::config::MIN_TOKEN_SECRET_LEN
            ))),
            None => self.store.local_token_secret(),
        }
    }

    /// Who `credential` is, when this process can tell without I/O (an admin key, or a
    /// tenant's credential seen before whose database is open); `None`: ask
    /// [`AppState::identify`], which may read the registry.
    pub fn recall(&self, credential: &Credential) -> Option<Option<Identity>> {
        match credential {
            Credential::None => Some(Some(Identity::Anonymous)),
            Credential::AdminKey(key) => {
                Some(self.admin_key_matches(key).then_some(Identity::Admin))
            }
            Credential::ApiKey(key) => {
                let record = self.store.registry().recall_api_key(key)?;
                let db = self.store.open_tenant_db(&record.id)?;
                Some(Some(Identity::Tenant(Tenant::of(record, db))))
            }
            Credential::Basic { user, pass } => {
                let record = self.store.registry().recall_basic(user, pass)?;
                let db = self.store.open_tenant_db(&record.id)?;
                Some(Some(Identity::Tenant(Tenant::of(record, db))))
            }
            Credential::Bearer(_) => None,
        }
    }

    /// Who `credential` is: `None` for a credential that opens nothing (unknown, wrong, expired,
    /// or of a deleted tenant). May read the registry on the blocking pool (a cold start
    /// downloads a tenant's snapshot).
    pub async fn identify(&self, credential: &Credential) -> crate::Result<Option<Identity>> {
        if let Some(known) = self.recall(credential) {
            return Ok(known);
        }
        let tenant = match credential {
            Credential::ApiKey(key) => {
                let (store, key) = (self.store.clone(), key.clone());
                crate::store::blocking(move || match store.registry().find_by_api_key(&key)? {
                    Some(record) => open_tenant(&store, record),
                    None => Ok(None),
                })
                .await?
            }
            Credential::Basic { user, pass } => {
                let (store, user, pass) = (self.store.clone(), user.clone(), pass.clone());
                crate::store::blocking(move || {
                    match store.registry().find_by_basic(&user, &pass)? {
                        Some(record) => open_tenant(&store, record),
                        None => Ok(None),
                    }
                })
                .await?
            }
            Credential::Bearer(token) => self.tenant_by_token(token).await?,
            Credential::None => return Ok(Some(Identity::Anonymous)),
            Credential::AdminKey(key) => {
                return Ok(self.admin_key_matches(key).then_some(Identity::Admin))
            }
        };
        Ok(tenant.map(Identity::Tenant))
    }

    /// Whether `presented` is the configured admin key (constant time; no key configured:
    /// never).
    pub fn admin_key_matches(&self, presented: &str) -> bool {
        self.config
            .admin_key
            .as_deref()
            .is_some_and(|k| crate::auth::admin_key_matches(presented, k))
    }

    /// The authenticated view of a registered tenant: its database is opened on the
    /// blocking pool (a cold start downloads a snapshot). A tenant deleted meanwhile (its
    /// tombstone seen) is `None`: its credentials no longer open anything.
    pub async fn tenant(&self, record: TenantRecord) -> crate::Result<Option<Tenant>> {
        let store = self.store.clone();
        crate::store::blocking(move || open_tenant(&store, record)).await
    }

    /// The tenant a valid bearer token was issued for.
    async fn tenant_by_token(&self, token: &str) -> crate::Result<Option<Tenant>> {
        let Ok(claims) = jwt::peek_claims(token) else {
            return Ok(None);
        };
        let secret = self.token_secret()?;
        let (store, token) = (self.store.clone(), token.to_string());
        crate::store::blocking(move || {
            let Some(record) = store.registry().tenant_for_token(&claims.sub)? else {
                return Ok(None);
            };
            let key = jwt::tenant_key(&secret, &record.id);
            match jwt::verify(&token, &key, crate::time::now().timestamp()) {
                Ok(_) => open_tenant(&store, record),
                Err(e) => {
                    tracing::debug!(error = %e, "bearer token refused");
                    Ok(None)
                }
            }
        })
        .await
    }
}

/// Opens a registered tenant's database (blocking). Not found means deleted: the store has
/// forgotten it and its cached credentials, so the caller answers 401.
fn open_tenant(store: &Store, record: TenantRecord) -> crate::Result<Option<Tenant>> {
    match store.tenant_db(&record.id) {
        Ok(db) => Ok(Some(Tenant::of(record, db))),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A tenant that presented valid credentials.
#[derive(Clone)]
pub struct Tenant {
    /// The registry entry.
    pub record: TenantRecord,
    /// The tenant's time zone.
    pub tz: Tz,
    /// The tenant's database.
    pub db: Arc<TenantDb>,
}

impl Tenant {
    /// The tenant of a registry entry and its open database (an unknown zone reads as UTC).
    fn of(record: TenantRecord, db: Arc<TenantDb>) -> Tenant {
        let tz = crate::time::parse_tz(&record.time_zone).unwrap_or(chrono_tz::UTC);
        Tenant { record, tz, db }
    }
}
