//! Sealing of the answers the registry keeps for idempotency keys: a tenant creation's
//! answer holds the tenant's clear credentials, and the registry (a SQLite database
//! replicated to the bucket) stores no clear secret.
//!
//! A sealed body is `nonce (24 bytes) || ciphertext || tag (16 bytes)`, sealed with
//! XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`, an AEAD: the tag authenticates the
//! nonce and the ciphertext). The key is HMAC-SHA256 of the configured token secret (which
//! is never in the bucket) under a label of its own, so it is never the key bearer tokens
//! are signed with. The nonce is random per sealed answer: the extended 24-byte nonce keeps
//! random nonces from colliding under one key however many answers are sealed.
//!
//! Invariant: [`open`] gives a body only when it was sealed by [`close`] under the same
//! secret and not altered since; anything else (another secret, a changed byte, a body
//! sealed by an earlier build's home-made scheme, a body too short) is `None`, and the
//! caller treats it as an answer it cannot read.

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;

const NONCE: usize = 24;
const TAG: usize = 16;

/// The cipher keyed by `secret` (see the module doc).
fn cipher(secret: &[u8]) -> XChaCha20Poly1305 {
    #[allow(
        clippy::expect_used,
        reason = "HMAC takes a key of any length: `new_from_slice` cannot fail"
    )]
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"sandbox idempotency answer: xchacha20poly1305 key");
    let key: [u8; 32] = mac.finalize().into_bytes().into();
    XChaCha20Poly1305::new(&key.into())
}

/// `body` sealed under `secret` (a fresh random nonce each time).
pub(super) fn close(secret: &[u8], body: &[u8]) -> Vec<u8> {
    let nonce: [u8; NONCE] = rand::random();
    #[allow(
        clippy::expect_used,
        reason = "encryption fails only for a body over 256 GiB; an answer is bounded far below"
    )]
    let sealed = cipher(secret)
        .encrypt(&XNonce::from(nonce), body)
        .expect("an answer is far below the cipher's 256 GiB bound");
    [&nonce[..], &sealed].concat()
}

/// The body `sealed` holds, if it was sealed under `secret` and not altered since.
pub(super) fn open(secret: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE + TAG {
        return None;
    }
    let (nonce, rest) = sealed.split_at(NONCE);
    let nonce: [u8; NONCE] = nonce.try_into().ok()?;
    // The crate checks the tag in constant time before it decrypts anything.
    cipher(secret).decrypt(&XNonce::from(nonce), rest).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"api_key":"sk_secret","basic":{"password":"pw"}}"#;

    #[test]
    fn a_sealed_body_opens_under_its_secret() {
        let body = BODY.repeat(3);
        let sealed = close(b"secret one", &body);
        assert_eq!(sealed.len(), body.len() + NONCE + TAG);
        assert!(!sealed.windows(9).any(|w| w == b"sk_secret"));
        assert_eq!(open(b"secret one", &sealed), Some(body.clone()));
        assert_ne!(
            close(b"secret one", &body),
            sealed,
            "a fresh nonce each time"
        );
        assert_eq!(
            open(b"secret one", &close(b"secret one", b"")),
            Some(vec![])
        );
    }

    #[test]
    fn a_sealed_body_does_not_open_under_another_secret() {
        let sealed = close(b"secret one", BODY);
        assert_eq!(open(b"secret two", &sealed), None);
        assert_eq!(open(b"", &sealed), None);
    }

    #[test]
    fn any_changed_byte_or_a_short_body_does_not_open() {
        let sealed = close(b"secret one", BODY);
        for at in 0..sealed.len() {
            let mut tampered = sealed.clone();
            tampered[at] ^= 0x01;
            assert_eq!(open(b"secret one", &tampered), None, "byte {at} flipped");
        }
        assert_eq!(open(b"secret one", &sealed[..sealed.len() - 1]), None);
        assert_eq!(
            open(b"secret one", &[sealed.as_slice(), b"x"].concat()),
            None
        );
        assert_eq!(open(b"secret one", b"short"), None);
        assert_eq!(open(b"secret one", &sealed[..NONCE + TAG - 1]), None);
    }

    /// The seal is the standard XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha) under the
    /// derived key, so any implementation opens it: this body was sealed by Python, with
    /// pyca/cryptography's ChaCha20Poly1305 under an HChaCha20 subkey (that implementation
    /// checked against the draft's test vector A.3.1), key HMAC-SHA256("secret one", label),
    /// nonce 00 01 .. 17.
    #[test]
    fn a_body_sealed_by_another_implementation_opens() {
        let sealed = hex::decode(
            "000102030405060708090a0b0c0d0e0f1011121314151617c3f368b14f0edab62da26dc4740a04e7\
             60e817697aadec0df36f2ac0e751991add4aea208d11031c217870b85a41b784dd5a6f4c1de208ff\
             76942f88902af264b1",
        )
        .unwrap();
        assert_eq!(open(b"secret one", &sealed).as_deref(), Some(BODY));
    }

    /// A body sealed by the earlier home-made scheme (HMAC-SHA256 keystream, 16-byte nonce,
    /// truncated HMAC tag) is not readable after the change: the caller answers that the
    /// request was applied and its answer cannot be read here.
    #[test]
    fn a_body_sealed_by_the_earlier_scheme_does_not_open() {
        let old = earlier_scheme(b"secret one", BODY);
        assert_eq!(open(b"secret one", &old), None);
    }

    /// A frozen copy of the earlier scheme's `close`, to build what registries hold.
    fn earlier_scheme(secret: &[u8], body: &[u8]) -> Vec<u8> {
        let mac = |key: &[u8], parts: &[&[u8]]| -> [u8; 32] {
            let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().into()
        };
        let stream = mac(secret, &[b"sandbox idempotency answer: stream"]);
        let tag_key = mac(secret, &[b"sandbox idempotency answer: tag"]);
        let nonce = [7u8; 16];
        let cipher: Vec<u8> = body
            .chunks(32)
            .enumerate()
            .flat_map(|(block, chunk)| {
                let pad = mac(&stream, &[&nonce, &(block as u64).to_le_bytes()]);
                chunk
                    .iter()
                    .zip(pad)
                    .map(|(b, p)| b ^ p)
                    .collect::<Vec<_>>()
            })
            .collect();
        let tag = mac(&tag_key, &[&nonce, &cipher]);
        [&nonce[..], &cipher, &tag[..16]].concat()
    }
}
