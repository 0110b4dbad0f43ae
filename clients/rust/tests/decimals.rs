//! The client's `Decimal` keeps every digit of an amount both ways (JSON number in, JSON
//! number out), where an f64 would keep about 16.

#![allow(clippy::expect_used, reason = "test code: a test fails by panicking")]

use sandbox_client::Decimal;
use serde::{Deserialize, Serialize};

#[test]
fn decimals_keep_their_digits_both_ways() {
    // 20 significant digits: an f64 keeps about 16.
    let text = r#"{"a":12345678901234.567891}"#;
    #[derive(Serialize, Deserialize)]
    struct A {
        a: Decimal,
    }
    let a: A = serde_json::from_str(text).expect("parse");
    assert_eq!(a.a.to_string(), "12345678901234.567891");
    assert_eq!(serde_json::to_string(&a).expect("write"), text);
}
