//! Sealing of the answers the registry keeps for idempotency keys: a tenant creation's
//! answer holds the tenant's clear credentials, and the registry (a SQLite database
//! replicated to the bucket) stores no clear secret. A sealed body is
//! `nonce (16 bytes) || ciphertext || tag (16 bytes)`: the ciphertext is the body XOR an
//! HMAC-SHA256 keystream (HMAC(k, nonce || block number)), the tag HMAC(k', nonce ||
//! ciphertext) truncated; k and k' are derived from the configured token secret, which is
//! never in the bucket. A body sealed under another secret does not open (`None`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const NONCE: usize = 16;
const TAG: usize = 16;

/// HMAC-SHA256 under `key`, fed `parts`, not finalised.
fn hmac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    #[allow(
        clippy::expect_used,
        reason = "HMAC takes a key of any length: `new_from_slice` cannot fail"
    )]
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    hmac(key, parts).finalize().into_bytes().into()
}

/// The two keys of `secret`: the keystream's and the tag's.
fn keys(secret: &[u8]) -> ([u8; 32], [u8; 32]) {
    (
        mac(secret, &[b"sandbox idempotency answer: stream"]),
        mac(secret, &[b"sandbox idempotency answer: tag"]),
    )
}

/// `data` XOR the keystream of `key` and `nonce`.
fn xor_stream(key: &[u8], nonce: &[u8], data: &[u8]) -> Vec<u8> {
    data.chunks(32)
        .enumerate()
        .flat_map(|(block, chunk)| {
            let pad = mac(key, &[nonce, &(block as u64).to_le_bytes()]);
            chunk
                .iter()
                .zip(pad)
                .map(|(b, p)| b ^ p)
                .collect::<Vec<u8>>()
        })
        .collect()
}

/// `body` sealed under `secret` (a fresh nonce each time).
pub(super) fn close(secret: &[u8], body: &[u8]) -> Vec<u8> {
    let (stream, tag_key) = keys(secret);
    let nonce = *uuid::Uuid::new_v4().as_bytes();
    let cipher = xor_stream(&stream, &nonce, body);
    let tag = mac(&tag_key, &[&nonce, &cipher]);
    [&nonce[..], &cipher, &tag[..TAG]].concat()
}

/// The body `sealed` holds, if it was sealed under `secret`.
pub(super) fn open(secret: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE + TAG {
        return None;
    }
    let (stream, tag_key) = keys(secret);
    let (nonce, rest) = sealed.split_at(NONCE);
    let (cipher, tag) = rest.split_at(rest.len() - TAG);
    // The hmac crate compares the truncated tag in constant time.
    hmac(&tag_key, &[nonce, cipher])
        .verify_truncated_left(tag)
        .ok()?;
    Some(xor_stream(&stream, nonce, cipher))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_body_opens_under_its_secret_only() {
        let body = br#"{"api_key":"sk_secret","basic":{"password":"pw"}}"#.repeat(3);
        let sealed = close(b"secret one", &body);
        assert_eq!(sealed.len(), body.len() + NONCE + TAG);
        assert!(!sealed.windows(9).any(|w| w == b"sk_secret"));
        assert_eq!(open(b"secret one", &sealed), Some(body.clone()));
        assert_eq!(open(b"secret two", &sealed), None);
        assert_ne!(
            close(b"secret one", &body),
            sealed,
            "a fresh nonce each time"
        );
        assert_eq!(
            open(b"secret one", &close(b"secret one", b"")),
            Some(vec![])
        );
        assert_eq!(open(b"secret one", b"short"), None);
    }
}
