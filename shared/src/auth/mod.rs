//! Credentials: generation, hashing, constant-time comparison, header parsing. The JWT part
//! is in [`jwt`].

pub mod jwt;

use base64::Engine;
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Shortest accepted token-signing secret (`SANDBOX_TOKEN_SECRET` or the one kept in the data
/// dir), in bytes: 256 bits of hex or base64 is longer.
pub const MIN_TOKEN_SECRET_LEN: usize = 32;

/// The clear-text credentials of a tenant, handed out once at creation.
#[derive(Debug, Clone, Serialize)]
pub struct Credentials {
    /// Surface B and C API key (`X-Api-Key`).
    pub api_key: String,
    /// Surface A HTTP Basic username (the tenant's name).
    pub username: String,
    /// Surface A HTTP Basic password.
    pub password: String,
}

impl Credentials {
    /// Fresh random credentials for the tenant named `name`.
    pub fn generate(name: &str) -> Credentials {
        Credentials {
            api_key: format!("sbx_{}", hex::encode(random_bytes(24))),
            username: name.to_string(),
            password: hex::encode(random_bytes(18)),
        }
    }
}

/// A new tenant identifier: `t_` and 16 hex digits.
pub fn new_tenant_id() -> String {
    format!("t_{}", hex::encode(random_bytes(8)))
}

/// `n` bytes from the operating system's CSPRNG.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut v);
    v
}

/// The stored form of a secret: SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Constant-time equality of two strings (length is not hidden, content is).
pub fn ct_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Checks a presented admin key against the configured one in constant time (both are
/// hashed first so that their lengths do not leak either).
pub fn admin_key_matches(presented: &str, configured: &str) -> bool {
    ct_eq(&hash_secret(presented), &hash_secret(configured))
}

/// Splits an `Authorization: Basic ...` value into username and password.
pub fn parse_basic(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_string(), pass.to_string()))
}

/// The token of an `Authorization: Bearer ...` value.
pub fn parse_bearer(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_header_round_trip() {
        let v = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("demo:p:w")
        );
        assert_eq!(parse_basic(&v), Some(("demo".into(), "p:w".into())));
        assert_eq!(parse_basic("Basic !!!"), None);
        assert_eq!(parse_basic("Bearer abc"), None);
        assert_eq!(parse_bearer("Bearer abc"), Some("abc"));
        assert_eq!(parse_bearer("Bearer "), None);
    }

    #[test]
    fn secrets_compare_by_hash() {
        let c = Credentials::generate("x");
        assert!(ct_eq(&hash_secret(&c.api_key), &hash_secret(&c.api_key)));
        assert!(!ct_eq(&hash_secret(&c.api_key), &hash_secret("sbx_other")));
        assert!(admin_key_matches("k", "k") && !admin_key_matches("k", "kk"));
    }
}
