//! Surface B's bounds on query strings and submitted dates (docs/limits.md), crossed over
//! HTTP: 400 `{code, message}` naming the input; the value at the bound is still read.

use e2e::billing::{send, setup, B};
use serde_json::json;

#[tokio::test]
async fn query_strings_and_dates_are_bounded() {
    let (s, t) = setup().await;
    let long = "a".repeat(4001);
    let many: String = (0..65).map(|i| format!("p{i}=1&")).collect();
    for (path, needle) in [
        (
            format!("/agreements?name={long}"),
            "name: at most 4000 characters, found 4001",
        ),
        (
            format!("/usage-events?reference_id={long}"),
            "reference_id: at most 4000",
        ),
        (format!("/agreements?{many}"), "65 parameters, at most 64"),
    ] {
        let r = send(s.client.get(s.url(&format!("{B}{path}"))), &t).await;
        assert_eq!(r.status, 400, "{}", r.body);
        let (code, message) = r.error();
        assert_eq!(code, "BAD_REQUEST");
        assert!(message.contains(needle), "{message}");
    }
    let at = "a".repeat(4000);
    let r = send(
        s.client.get(s.url(&format!("{B}/agreements?name={at}"))),
        &t,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Dates: years 0001..9999, in filters and in bodies.
    let batch = |date: &str| json!({"bill_batch_type": "adhoc", "name": format!("run {date}"), "invoice_date": date});
    for date in ["0000-12-31", "-0001-01-01", "+10000-01-01"] {
        let r = send(
            s.client
                .post(s.url(&format!("{B}/bill-batches")))
                .json(&batch(date)),
            &t,
        )
        .await;
        assert_eq!(r.status, 400, "{date}: {}", r.body);
        assert!(r.error().1.contains("invoice_date"), "{}", r.body);
    }
    let r = send(
        s.client
            .get(s.url(&format!("{B}/agreements")))
            .query(&[("filter", "valid_from GT '0000-01-01'")]),
        &t,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    for date in ["0001-01-01", "9999-12-31"] {
        let r = send(
            s.client
                .post(s.url(&format!("{B}/bill-batches")))
                .json(&batch(date)),
            &t,
        )
        .await;
        assert_eq!(r.status, 200, "{date}: {}", r.body);
    }
}
