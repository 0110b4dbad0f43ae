//! Names clients give to what the sandbox keeps for them (tenants, checkpoints): one
//! character rule for all of them. A name becomes part of file names, S3 keys and HTTP Basic
//! usernames, so it is 1 to [`MAX_LEN`] characters of `A-Z a-z 0-9 - _ .` (no `/`, no
//! space, no `:`, nothing to escape). Kept apart from both users so that the store can apply
//! it without depending on the tenant lifecycle above it. Names also arrive percent-encoded
//! in paths and query strings: [`percent_decode`] is the one decoder of them.

/// Longest name accepted.
pub const MAX_LEN: usize = 64;

/// The rule of [`is_plain`] in words, for error messages.
pub const RULE: &str = "1 to 64 characters of A-Z, a-z, 0-9, '-', '_' or '.'";

/// Whether `name` is 1 to [`MAX_LEN`] characters of `A-Z a-z 0-9 - _ .`.
pub fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The bytes `%XX` escapes stand for, decoded (a malformed escape is kept as written); with
/// `plus_is_space` (a query-string component, `application/x-www-form-urlencoded`), `+` is a
/// space too. The caller decides what bytes that are not UTF-8 mean.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Two hex digits exactly (from_str_radix alone would also take a sign: "%+1").
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_short_and_of_the_safe_characters() {
        for ok in ["a", "golden-1", "A_b.c", "-x", &"x".repeat(MAX_LEN)] {
            assert!(is_plain(ok), "{ok}");
        }
        for bad in ["", "a/b", "a b", "é", "a:b", &"x".repeat(MAX_LEN + 1)] {
            assert!(!is_plain(bad), "{bad}");
        }
        assert!(RULE.contains(&MAX_LEN.to_string()));
    }

    #[test]
    fn escapes_decode_and_malformed_ones_stay() {
        assert_eq!(percent_decode("%74%5F1", false), b"t_1");
        assert_eq!(percent_decode("a+b", true), b"a b");
        assert_eq!(percent_decode("a+b", false), b"a+b");
        assert_eq!(percent_decode("%+1%zz%4", false), b"%+1%zz%4");
        assert_eq!(percent_decode("%ff", false), [0xff]);
    }
}
