//! Surface C's authentication: the tenant of a request is the one the pipeline identified
//! from its `X-Api-Key` (`shared::web::pipeline`); a missing or unknown key is 401
//! AUTHENTICATION_FAILED with the platform's own wording, answered by the pipeline (this
//! extractor's rejection is the same answer, for a handler served without one).

use axum::extract::FromRequestParts;
use axum::http::{request::Parts, StatusCode};
use shared::web::{identified_tenant, ApiError, Surface, Tenant};

/// Surface C's 401 message, exactly as the platform words it.
pub const REVENUE_AUTH_MESSAGE: &str = shared::web::surface::REVENUE_AUTH_MESSAGE;

/// The tenant of a Surface C request (`X-Api-Key`).
pub struct RevenueAuth(pub Tenant);

impl<S: Send + Sync> FromRequestParts<S> for RevenueAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        identified_tenant(parts).map(RevenueAuth).ok_or_else(|| {
            let (code, message) = Surface::Revenue.unauthorized_parts();
            ApiError::new(StatusCode::UNAUTHORIZED, code, message)
        })
    }
}
