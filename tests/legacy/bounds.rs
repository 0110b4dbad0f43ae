//! Surface A's bounds on query strings and submitted dates (docs/limits.md), crossed over
//! HTTP: 400 `VALIDATION_FAILURE` naming the input.

use e2e::legacy::Legacy;
use reqwest::Method;

#[tokio::test]
async fn query_strings_and_dates_are_bounded() {
    let a = Legacy::start("demo").await;
    let long = format!("billingAccounts?accountNum={}", "a".repeat(4001));
    let many = format!(
        "billingAccounts?{}",
        (0..65)
            .map(|i| format!("_{i}=1"))
            .collect::<Vec<_>>()
            .join("&")
    );
    let date = |d: &str| {
        format!(
            r#"<invoice invoiceNum="Y-{d}" amount="1" occurredOn="{d}"><billingAccount eid="3"/></invoice>"#
        )
    };
    let (y0, y10000) = (date("0000-06-01"), date("+10000-06-01"));
    a.assert_faults(&[
        (
            Method::GET,
            &long,
            None,
            400,
            "VALIDATION_FAILURE",
            "accountNum: at most 4000 characters",
        ),
        (
            Method::GET,
            &many,
            None,
            400,
            "VALIDATION_FAILURE",
            "65 parameters, at most 64",
        ),
        (
            Method::POST,
            "invoices",
            Some(&y0),
            400,
            "VALIDATION_FAILURE",
            "occurredOn",
        ),
        (
            Method::POST,
            "invoices",
            Some(&y10000),
            400,
            "VALIDATION_FAILURE",
            "occurredOn",
        ),
    ])
    .await;
    // At the bounds: read and stored.
    let at = format!("billingAccounts?accountNum={}", "a".repeat(4000));
    assert_eq!(a.get(&at).await.status, 200);
    assert_eq!(a.post("invoices", &date("9999-12-31")).await.status, 201);
}
