//! The one home of what differs per surface: the path prefixes a surface is served under,
//! the credentials it takes (and how their headers are parsed), its error shape (JSON
//! `{code, message}` on B, C and the admin API; the XML `fault` on A), its 401, and its
//! paging convention. Everything that asks "which surface is this path", "which credential
//! does this request present" or "how is this error written" asks [`Surface`].
//!
//! Invariants: prefixes never overlap, so a path belongs to at most one surface; a
//! credential is parsed from headers only (never the body), and the same secret spelled with
//! another scheme case or other spaces parses to the same [`Credential`].

use super::error::ApiError;
use super::listing::{Paging, BILLING_PAGING, LEGACY_PAGING, REVENUE_PAGING};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::OnceLock;

/// Route prefix of Surface A (legacy XML).
pub const LEGACY_PREFIX: &str = "/t/s/r/1.28";
/// Route prefix of Surface B (billing API v2).
pub const BILLING_PREFIX: &str = "/billing/2";
/// Route prefix of Surface C (revenue management), the one the docs use.
pub const REVENUE_PREFIX: &str = "/revenue/3";
/// The production platform's base path of Surface C (platform-facts.md: `/calypso/3/`);
/// the same routes are served under it, so a client written against the platform works
/// unchanged.
pub const REVENUE_ALIAS_PREFIX: &str = "/calypso/3";
/// Every prefix Surface C is served under.
pub const REVENUE_PREFIXES: [&str; 2] = [REVENUE_PREFIX, REVENUE_ALIAS_PREFIX];
/// Route prefix of the sandbox admin API.
pub const ADMIN_PREFIX: &str = "/sandbox/v1";

/// The default XML domain namespace of Surface A (`SANDBOX_XML_NAMESPACE` overrides it).
pub const DEFAULT_XML_NAMESPACE: &str = "http://billing-sandbox.dev/xml/domain/1.28";

/// The namespace of this process, set once from the configuration by
/// [`set_xml_namespace`] (the router's finishing does it).
static XML_NAMESPACE: OnceLock<String> = OnceLock::new();

/// Takes Surface A's namespace from the configuration. A process serves one configuration:
/// the first call wins; without one, answers use [`DEFAULT_XML_NAMESPACE`].
pub fn set_xml_namespace(namespace: Option<&str>) {
    if let Some(ns) = namespace {
        let _ = XML_NAMESPACE.set(ns.to_string());
    }
}

/// The XML domain namespace of Surface A (configured, else the default).
pub fn xml_namespace() -> &'static str {
    XML_NAMESPACE
        .get()
        .map(String::as_str)
        .unwrap_or(DEFAULT_XML_NAMESPACE)
}

/// A surface of the sandbox: the platform's three, and the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// Surface A, the legacy XML interface (HTTP Basic).
    Legacy,
    /// Surface B, the JSON billing API v2 (`X-Api-Key`, else a bearer token).
    Billing,
    /// Surface C, the JSON revenue management API (`X-Api-Key`).
    Revenue,
    /// The sandbox admin API (`X-Admin-Key`).
    Admin,
}

/// The credential a request presents, by its surface's rule, parsed from headers only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// Nothing the surface reads was sent.
    None,
    /// `X-Api-Key` (Surfaces B and C).
    ApiKey(String),
    /// `Authorization: Bearer <JWT>` (Surface B).
    Bearer(String),
    /// `Authorization: Basic` (Surface A), decoded.
    Basic {
        /// The username (the tenant's name).
        user: String,
        /// The password.
        pass: String,
    },
    /// `X-Admin-Key` (admin API).
    AdminKey(String),
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 4] = [
        Surface::Legacy,
        Surface::Billing,
        Surface::Revenue,
        Surface::Admin,
    ];

    /// The surface a path belongs to (by prefix), if any.
    pub fn of(path: &str) -> Option<Surface> {
        Surface::ALL
            .into_iter()
            .find(|s| s.prefixes().iter().any(|p| under(path, p)))
    }

    /// The prefixes the surface is served under.
    pub fn prefixes(self) -> &'static [&'static str] {
        match self {
            Surface::Legacy => &[LEGACY_PREFIX],
            Surface::Billing => &[BILLING_PREFIX],
            Surface::Revenue => &REVENUE_PREFIXES,
            Surface::Admin => &[ADMIN_PREFIX],
        }
    }

    /// The short name the journal records (`A`, `B`, `C`, `admin`).
    pub fn name(self) -> &'static str {
        match self {
            Surface::Legacy => "A",
            Surface::Billing => "B",
            Surface::Revenue => "C",
            Surface::Admin => "admin",
        }
    }

    /// The paging convention of the surface's lists (the admin API pages as Surface C).
    pub fn paging(self) -> &'static Paging {
        match self {
            Surface::Legacy => &LEGACY_PAGING,
            Surface::Billing => &BILLING_PAGING,
            Surface::Revenue | Surface::Admin => &REVENUE_PAGING,
        }
    }

    /// The credential the request presents by this surface's rule: A `Authorization: Basic`;
    /// B `X-Api-Key`, else `Authorization: Bearer`; C `X-Api-Key`; admin `X-Admin-Key`.
    pub fn credential(self, headers: &HeaderMap) -> Credential {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let api_key = || header_str(headers, "x-api-key").map(|k| Credential::ApiKey(k.into()));
        let found = match self {
            Surface::Legacy => authorization
                .and_then(crate::auth::parse_basic)
                .map(|(user, pass)| Credential::Basic { user, pass }),
            Surface::Billing => api_key().or_else(|| {
                authorization
                    .and_then(crate::auth::parse_bearer)
                    .map(|t| Credential::Bearer(t.to_string()))
            }),
            Surface::Revenue => api_key(),
            Surface::Admin => {
                header_str(headers, "x-admin-key").map(|k| Credential::AdminKey(k.into()))
            }
        };
        found.unwrap_or(Credential::None)
    }

    /// An error answer in the surface's shape. `code` is the JSON `code` (default: the
    /// status's reason in capitals, e.g. `SERVICE_UNAVAILABLE`); on Surface A the fault's
    /// `failureReason` follows the status (400 and 413 VALIDATION_FAILURE, 409 ALREADY_EXISTS, else
    /// GENERAL) unless `code` names one.
    pub fn error(self, status: StatusCode, code: Option<&str>, message: String) -> Response {
        match self {
            Surface::Legacy => {
                let reason = code.unwrap_or(match status {
                    StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "VALIDATION_FAILURE",
                    StatusCode::CONFLICT => "ALREADY_EXISTS",
                    _ => "GENERAL",
                });
                let mut response = xml_fault(status, reason, &message);
                if status == StatusCode::UNAUTHORIZED {
                    response.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Basic realm=\"billing-sandbox\""),
                    );
                }
                response
            }
            _ => {
                let code = code
                    .map(str::to_string)
                    .unwrap_or_else(|| reason_code(status));
                ApiError::new(status, &code, message).into_response()
            }
        }
    }

    /// A domain or store error in the surface's shape (its status and message as
    /// [`ApiError::from`] maps them).
    pub fn from_error(self, e: crate::Error) -> Response {
        let api = ApiError::from(e);
        match self {
            Surface::Legacy => self.error(api.status, None, api.message),
            _ => api.into_response(),
        }
    }

    /// The surface's answer to missing or refused credentials (401).
    pub fn unauthorized(self) -> Response {
        let (code, message) = self.unauthorized_parts();
        self.error(StatusCode::UNAUTHORIZED, Some(code), message.to_string())
    }

    /// The code and message of the surface's 401 (the platform's own wording on C).
    pub fn unauthorized_parts(self) -> (&'static str, &'static str) {
        match self {
            Surface::Legacy => ("GENERAL", LEGACY_AUTH_MESSAGE),
            Surface::Billing => ("UNAUTHORIZED", BILLING_AUTH_MESSAGE),
            Surface::Revenue => ("AUTHENTICATION_FAILED", REVENUE_AUTH_MESSAGE),
            Surface::Admin => ("UNAUTHORIZED", ADMIN_AUTH_MESSAGE),
        }
    }
}

/// An error answer in the shape of the surface `path` belongs to; paths of no surface answer
/// the `{code, message}` shape.
pub fn error_for_path(path: &str, status: StatusCode, message: String) -> Response {
    match Surface::of(path) {
        Some(surface) => surface.error(status, None, message),
        None => ApiError::new(status, &reason_code(status), message).into_response(),
    }
}

/// Surface A's 401 message.
pub const LEGACY_AUTH_MESSAGE: &str =
    "Authentication required: send HTTP Basic credentials of a sandbox tenant.";
/// Surface B's 401 message.
pub const BILLING_AUTH_MESSAGE: &str =
    "Missing or invalid credentials: send X-Api-Key or Authorization: Bearer <JWT>.";
/// Surface C's 401 message, exactly as the platform words it.
pub const REVENUE_AUTH_MESSAGE: &str = "Authentication failed.";
/// The admin API's 401 message.
pub const ADMIN_AUTH_MESSAGE: &str = "Missing or invalid admin key: send X-Admin-Key.";

/// Whether `path` is `prefix` or below it (`/billing/2x` is not under `/billing/2`).
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'))
}

/// A status's reason in capitals with underscores (`Service Unavailable` ->
/// `SERVICE_UNAVAILABLE`), the JSON `code` of errors the sandbox itself answers.
pub fn reason_code(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("ERROR")
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => Some(c.to_ascii_uppercase()),
            ' ' | '-' => Some('_'),
            _ => None,
        })
        .collect()
}

/// A header's value as text, when present, non-empty and visible ASCII (trimmed).
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Surface A's error body: an XML `fault` with `failureReason` and `message`.
pub fn xml_fault(status: StatusCode, failure_reason: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fault xmlns=\"{ns}\"><failureReason>{reason}</failureReason><message>{msg}</message></fault>",
        ns = quick_xml::escape::escape(xml_namespace()),
        reason = quick_xml::escape::escape(failure_reason),
        // A message may quote a decoded path or query value: what XML cannot carry is
        // replaced, so the fault stays a well-formed document.
        msg = quick_xml::escape::escape(crate::domain::xml_safe(message).as_ref()),
    );
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_belong_to_one_surface() {
        assert_eq!(
            Surface::of("/t/s/r/1.28/billingAccounts"),
            Some(Surface::Legacy)
        );
        assert_eq!(Surface::of("/t/s/r/1.28"), Some(Surface::Legacy));
        assert_eq!(Surface::of("/billing/2/agreements"), Some(Surface::Billing));
        assert_eq!(Surface::of("/calypso/3/ledgers"), Some(Surface::Revenue));
        assert_eq!(Surface::of("/revenue/3"), Some(Surface::Revenue));
        assert_eq!(Surface::of("/sandbox/v1/tenants"), Some(Surface::Admin));
        assert_eq!(Surface::of("/billing/22/x"), None);
        assert_eq!(Surface::of("/sandbox/console"), None);
    }

    #[test]
    fn credentials_by_surface_rule() {
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static(" k1 "));
        h.insert("authorization", HeaderValue::from_static("bearer tok"));
        assert_eq!(
            Surface::Billing.credential(&h),
            Credential::ApiKey("k1".into())
        );
        assert_eq!(
            Surface::Revenue.credential(&h),
            Credential::ApiKey("k1".into())
        );
        assert_eq!(Surface::Legacy.credential(&h), Credential::None);
        h.remove("x-api-key");
        assert_eq!(
            Surface::Billing.credential(&h),
            Credential::Bearer("tok".into())
        );
        // The same Basic secret in another scheme case and with extra spaces.
        for v in ["Basic ZGVtbzpwdw==", "bAsIc    ZGVtbzpwdw==  "] {
            h.insert("authorization", HeaderValue::from_static(v));
            assert_eq!(
                Surface::Legacy.credential(&h),
                Credential::Basic {
                    user: "demo".into(),
                    pass: "pw".into()
                }
            );
        }
    }
}
