//! HS256 JSON Web Tokens for Surface B's bearer scheme.
//!
//! - The algorithm is pinned: a header whose `alg` is anything but `HS256` (`none`, `HS512`,
//!   `RS256`...) is refused before any key is looked at.
//! - Each tenant signs with its own key, `HMAC-SHA256(master, "jwt:" + tenant_id)`, derived from
//!   the configured master secret (`SANDBOX_TOKEN_SECRET`, see `config`; never stored in the
//!   registry or the bucket), so no per-tenant signing key is stored anywhere.
//! - `exp` is required and checked (no leeway); `sub` names the tenant.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Issuer written into every token.
pub const ISSUER: &str = "billing-sandbox";

/// The claims a sandbox token carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The tenant id.
    pub sub: String,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Always [`ISSUER`].
    pub iss: String,
}

/// Why a token was refused (for logs; clients only see 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not three base64url parts of JSON.
    #[error("malformed token")]
    Malformed,
    /// `alg` is not HS256.
    #[error("algorithm not allowed")]
    Algorithm,
    /// The signature does not match.
    #[error("bad signature")]
    Signature,
    /// `exp` is in the past.
    #[error("token expired")]
    Expired,
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    typ: Option<String>,
}

/// The signing key of one tenant.
pub fn tenant_key(master: &[u8], tenant_id: &str) -> Vec<u8> {
    sign(master, format!("jwt:{tenant_id}").as_bytes())
}

fn sign(key: &[u8], data: &[u8]) -> Vec<u8> {
    #[allow(
        clippy::expect_used,
        reason = "HMAC takes a key of any length: `new_from_slice` cannot fail"
    )]
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Issues a token for `claims`, signed with `key`.
pub fn encode(claims: &Claims, key: &[u8]) -> String {
    let header = B64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = B64.encode(serde_json::to_vec(claims).unwrap_or_default());
    let signing_input = format!("{header}.{payload}");
    let sig = B64.encode(sign(key, signing_input.as_bytes()));
    format!("{signing_input}.{sig}")
}

/// Reads the claims without checking anything: only to learn which tenant's key to verify
/// with. Never trust the result before [`verify`] accepted the token.
pub fn peek_claims(token: &str) -> Result<Claims, JwtError> {
    let (header, payload, _) = split(token)?;
    let header: Header = decode_json(header)?;
    if header.alg != "HS256" {
        return Err(JwtError::Algorithm);
    }
    decode_json(payload)
}

/// Verifies algorithm, signature and expiry; answers the claims.
pub fn verify(token: &str, key: &[u8], now: i64) -> Result<Claims, JwtError> {
    let claims = peek_claims(token)?;
    let (header, payload, sig) = split(token)?;
    let sig = B64.decode(sig).map_err(|_| JwtError::Malformed)?;
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| JwtError::Signature)?;
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    mac.verify_slice(&sig).map_err(|_| JwtError::Signature)?;
    if claims.exp <= now {
        return Err(JwtError::Expired);
    }
    Ok(claims)
}

fn split(token: &str) -> Result<(&str, &str, &str), JwtError> {
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(p), Some(s), None) if !h.is_empty() && !p.is_empty() => Ok((h, p, s)),
        _ => Err(JwtError::Malformed),
    }
}

fn decode_json<T: serde::de::DeserializeOwned>(part: &str) -> Result<T, JwtError> {
    let bytes = B64.decode(part).map_err(|_| JwtError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> Claims {
        Claims {
            sub: "t_1".into(),
            iat: 0,
            exp,
            iss: ISSUER.into(),
        }
    }

    #[test]
    fn round_trip_and_rejections() {
        let key = tenant_key(b"master", "t_1");
        let t = encode(&claims(100), &key);
        assert_eq!(verify(&t, &key, 50), Ok(claims(100)));
        assert_eq!(verify(&t, &key, 100), Err(JwtError::Expired));
        let other = tenant_key(b"master", "t_2");
        assert_eq!(verify(&t, &other, 50), Err(JwtError::Signature));
        assert_eq!(verify("a.b", &key, 0), Err(JwtError::Malformed));
    }

    #[test]
    fn alg_none_is_refused() {
        let h = B64.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let p = B64.encode(serde_json::to_vec(&claims(i64::MAX)).unwrap());
        let key = tenant_key(b"master", "t_1");
        assert_eq!(
            verify(&format!("{h}.{p}."), &key, 0),
            Err(JwtError::Algorithm)
        );
        let h512 = B64.encode(br#"{"alg":"HS512"}"#);
        assert_eq!(
            verify(&format!("{h512}.{p}.x"), &key, 0),
            Err(JwtError::Algorithm)
        );
    }
}
