//! Surface C's input bounds that a real client never reaches (docs/limits.md): each one is
//! crossed over HTTP and answers 400 `{code, message}` naming the input, and the value at the
//! bound is still accepted.

use e2e::revenue::Rev;
use e2e::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

fn run(operations: Value) -> Value {
    json!({"type": "AUTO", "collector_operations": operations,
           "data_fetch_from_date": "2026-01-01T00:00:00Z",
           "data_fetch_to_date": "2026-12-31T00:00:00Z", "overlap_fetch_time": 0})
}

#[tokio::test]
async fn ledger_calendar_and_run_inputs_are_bounded() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "bounds", "demo").await;
    let l = c
        .expect(
            Method::POST,
            "/ledgers",
            Some(json!({"name": "Bounded"})),
            201,
        )
        .await;
    let ledger = format!("/ledgers/{}", l["id"]);
    let years = format!("{ledger}/calendar/years");
    let periods = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"name": format!("P{i}"), "start_date": "2031-01-01", "end_date": "2031-01-01"}))
            .collect()
    };
    let year = |start: &str, end: &str, periods: Value| json!({"name": "FY", "start_date": start, "end_date": end, "accounting-periods": periods});
    let cases: Vec<(Method, &str, Value, &str)> = vec![
        (
            Method::PUT,
            &ledger,
            json!({"expected_customer_lifetime": -1}),
            "expected_customer_lifetime: -1 is out of range 0..1200",
        ),
        (
            Method::PUT,
            &ledger,
            json!({"expected_customer_lifetime": 1201}),
            "expected_customer_lifetime",
        ),
        (
            Method::PUT,
            &ledger,
            json!({"billing_account_category_ids": vec![1; 1001]}),
            "billing_account_category_ids: at most 1000, found 1001",
        ),
        (
            Method::POST,
            &years,
            year("0000-01-01", "0000-12-31", json!([])),
            "years 0001..9999",
        ),
        (
            Method::POST,
            &years,
            year("9999-01-01", "+10000-12-31", json!([])),
            "years 0001..9999",
        ),
        (
            Method::POST,
            &years,
            year("2031-01-01", "2031-12-31", periods(1001)),
            "accounting-periods: at most 1000 per year, found 1001",
        ),
        (
            Method::POST,
            "/collector-runs",
            run(json!(vec!["INSERT_USAGE"; 101])),
            "collector_operations: at most 100 names, found 101",
        ),
        (
            Method::POST,
            "/glruns",
            json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": "0000-12-31"}),
            "run_to_date: '0000-12-31' is outside years 0001..9999",
        ),
    ];
    for (method, path, body, needle) in cases {
        let message = c.error(method.clone(), path, Some(body), 400).await;
        assert!(message.contains(needle), "{method} {path}: {message}");
    }

    // At the bounds: accepted.
    let at = c
        .expect(
            Method::PUT,
            &ledger,
            Some(json!({"expected_customer_lifetime": 1200, "billing_account_category_ids": vec![1; 1000]})),
            200,
        )
        .await;
    assert_eq!(at["expected_customer_lifetime"], 1200, "{at}");
    c.expect(
        Method::POST,
        &years,
        Some(year("9999-01-01", "9999-12-31", json!([]))),
        200,
    )
    .await;
    c.expect(
        Method::POST,
        &years,
        Some(year("0001-01-01", "0001-12-31", json!([]))),
        200,
    )
    .await;
    c.collect(run(json!(vec!["INSERT_USAGE"; 100]))).await;
}

#[tokio::test]
async fn query_strings_are_bounded() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "query", "demo").await;
    let long = "a".repeat(4001);
    let many: String = (0..65).map(|i| format!("p{i}=1&")).collect();
    let name = "n".repeat(256);
    for (path, needle) in [
        (
            format!("/ledgers?name={long}"),
            "name: at most 4000 characters, found 4001",
        ),
        (format!("/ledgers?{many}"), "65 parameters, at most 64"),
        (
            format!("/ledgers?{name}=1"),
            "a name has at most 255 characters",
        ),
    ] {
        let message = c.error(Method::GET, &path, None, 400).await;
        assert!(message.contains(needle), "{message}");
        // The platform's base path reads its query the same way.
        let r = s
            .client
            .get(s.url(&format!("/calypso/3{path}")))
            .header("X-Api-Key", &c.t.api_key)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 400);
    }
    // At the bounds: a value of 4000 characters and 64 parameters are read.
    let at = "a".repeat(4000);
    c.paged(&format!("/ledgers?name={at}")).await;
    let sixty_four: String = (0..63).map(|i| format!("p{i}=1&")).collect();
    c.paged(&format!("/ledgers?{sixty_four}page_size=1")).await;
}

/// `run_to_date` `9999-12-31` ("no end") covers everything: its exclusive bound (the next
/// midnight in the ledger's zone) is in year 10000, which the run used to store as
/// `+10000-...`, a text sorting before every date, so the run posted nothing.
#[tokio::test]
async fn a_ledger_run_to_the_last_day_posts_like_a_run_to_any_later_date() {
    let s = TestServer::start().await;
    let mut entries = Vec::new();
    for (name, to) in [("near", "2100-01-01"), ("last", "9999-12-31")] {
        let c = Rev::new(&s, name, "demo").await;
        c.collect(json!({"type": "AUTO", "collector_operations": [],
            "data_fetch_from_date": "2000-01-01T00:00:00Z",
            "data_fetch_to_date": "2099-12-31T00:00:00Z", "overlap_fetch_time": 0}))
            .await;
        let run = c
            .gl_run(json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": to}))
            .await;
        assert!(
            run["run_to_date"]
                .as_str()
                .is_some_and(|t| !t.starts_with('+')),
            "{run}"
        );
        let (_, total, _, _) = c
            .paged(&format!("/glruns/{}/journal-entries", run["id"]))
            .await;
        entries.push(total);
    }
    assert!(entries[0] > 0, "the demo data posts entries: {entries:?}");
    assert_eq!(entries[0], entries[1], "{entries:?}");
}
