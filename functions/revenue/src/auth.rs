//! Surface C's authentication: the tenant of a request is named by its `X-Api-Key`; a
//! missing or unknown key is 401 AUTHENTICATION_FAILED with the platform's own wording.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::{request::Parts, StatusCode};
use shared::web::{header_str, ApiError, AppState, Authenticated, Tenant};

/// Surface C's 401 message, exactly as the platform words it.
pub const REVENUE_AUTH_MESSAGE: &str = "Authentication failed.";

/// The tenant of a Surface C request (`X-Api-Key`).
pub struct RevenueAuth(pub Tenant);

impl<S> FromRequestParts<S> for RevenueAuth
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        let tenant = match Authenticated::of(parts, "C") {
            Some(found) => found,
            None => match header_str(&parts.headers, "x-api-key") {
                Some(key) => app.tenant_by_api_key(key).await?,
                None => None,
            },
        };
        let tenant = tenant.ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "AUTHENTICATION_FAILED",
                REVENUE_AUTH_MESSAGE,
            )
        })?;
        Ok(RevenueAuth(tenant))
    }
}
