//! The whole sandbox as one router: every route group merged. The local server, the
//! single-Lambda deployment and the black-box tests all serve this.

pub mod server;

use axum::Router;
use shared::auth::Credentials;
use shared::fixtures::Seed;
use shared::store::TenantRecord;
use shared::web::AppState;

/// Every route group's routes, merged and bound to `state`. Unknown Surface A paths answer
/// with Surface A's XML fault, every other unknown path with `{code, message}`.
pub fn app(state: AppState) -> Router {
    legacy::configure(&state.config);
    let routes = Router::new()
        .merge(legacy::routes())
        .merge(usage::routes())
        .merge(billing::routes())
        .merge(revenue::routes())
        .merge(admin::routes());
    shared::web::finish(routes, state)
}

/// Name of the tenant created on first start.
pub const DEMO_TENANT: &str = "demo";
/// Time zone of the demo tenant (the platform's documentation examples use -06:00).
pub const DEMO_TIME_ZONE: &str = "America/Chicago";

/// Creates the `demo` tenant when the store has no tenant at all; answers its credentials
/// when it was created now.
pub async fn ensure_demo_tenant(
    state: &AppState,
) -> shared::Result<Option<(TenantRecord, Credentials)>> {
    if !shared::tenants::list(&state.store).await?.is_empty() {
        return Ok(None);
    }
    match shared::tenants::create(
        &state.store,
        DEMO_TENANT,
        Seed::Demo,
        DEMO_TIME_ZONE,
        |_| Ok(()),
    )
    .await
    {
        Ok(created) => Ok(Some(created)),
        // Another server on the same bucket created it first: it exists, which is the goal.
        Err(shared::Error::Conflict(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The start-up banner: where each surface listens, the credentials, and a curl line each.
pub fn banner(base: &str, admin_key: &str, demo: Option<&(TenantRecord, Credentials)>) -> String {
    let mut out = format!(
        "billing sandbox listening on {base}\n  Surface A (XML):     {base}/t/s/r/1.28\n  Surface B (JSON v2): {base}/billing/2\n  Surface C (revenue): {base}/revenue/3   (also {base}/calypso/3)\n  Admin API:           {base}/sandbox/v1   (X-Admin-Key: {admin_key})\n"
    );
    if let Some((tenant, creds)) = demo {
        out.push_str(&format!(
            "\nCreated tenant '{name}' ({id}) with the demo data set:\n  api key:  {key}\n  basic:    {user}:{pass}\n\nTry:\n  curl -u '{user}:{pass}' {base}/t/s/r/1.28/users/current\n  curl -H 'X-Api-Key: {key}' {base}/billing/2/adjustment-categories/5\n  curl -H 'X-Api-Key: {key}' '{base}/revenue/3/collectors?page_size=2'\n  curl -H 'X-Admin-Key: {admin_key}' {base}/sandbox/v1/tenants\n",
            name = tenant.name,
            id = tenant.id,
            key = creds.api_key,
            user = creds.username,
            pass = creds.password,
        ));
    } else {
        out.push_str(
            "\nExisting tenants kept; their credentials were shown when they were created.\n",
        );
    }
    out
}
