//! `GET` and `PUT /sandbox/v1/tenants/{id}/policy`: the tenant's billing policy
//! (`shared::domain::policy`: recurring timing, proration, payment terms, usage tiers, the
//! default agreement period, how runs progress, autopay retries). `PUT` takes a partial
//! document: the members it names are checked (a 400 naming the member and its allowed
//! values, nothing written) and set, the others keep their value; it answers the whole policy.

use crate::AdminAuth;
use axum::extract::{Path, State};
use axum::Json;
use shared::domain::policy::{self, BillingPolicy, PolicyChange};
use shared::web::{ApiError, AppState, JsonBody};

pub(crate) async fn get_policy(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<BillingPolicy>, ApiError> {
    let t = crate::powers::tenant(&app, &id).await?;
    Ok(Json(t.db.read(policy::get).await?))
}

pub(crate) async fn set_policy(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(change): JsonBody<PolicyChange>,
) -> Result<Json<BillingPolicy>, ApiError> {
    let t = crate::powers::tenant(&app, &id).await?;
    // Checked before the write, so a refusal writes nothing (no log entry either).
    change.apply(&BillingPolicy::default())?;
    let set =
        t.db.write(move |tx| {
            let now = shared::time::to_storage(shared::time::now_for(tx)?);
            policy::set(tx, &change, &now)
        })
        .await?;
    Ok(Json(set))
}
