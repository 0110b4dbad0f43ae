//! Names clients give to what the sandbox keeps for them (tenants, checkpoints): one
//! character rule for all of them. A name becomes part of file names, S3 keys and HTTP Basic
//! usernames, so it is 1 to [`MAX_LEN`] characters of `A-Z a-z 0-9 - _ .` (no `/`, no
//! space, no `:`, nothing to escape). Kept apart from both users so that the store can apply
//! it without depending on the tenant lifecycle above it.

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
}
