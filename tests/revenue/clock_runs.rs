//! Surface C runs that progress with the tenant clock (billing policy `runs: WITH_CLOCK`,
//! docs/revenue.md "Runs and the clock"): a polling client sees NOT_STARTED, RUNNING, then
//! COMPLETE or ERROR as the clock advances, and nothing a run makes before it has ended; a
//! clock on real time finishes runs by itself; AT_ONCE (the default) still finishes them in
//! the POST. Every status is read back over HTTP between the clock's moves.

use super::chain::autumn_run;
use e2e::revenue::{text, Rev};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A demo tenant, its clock frozen at `at` (after the demo's autumn), with its billing policy
/// set to `runs` (AT_ONCE or WITH_CLOCK).
async fn tenant<'a>(s: &'a TestServer, name: &str, runs: &str, at: &str) -> Rev<'a> {
    let c = Rev::new(s, name, "demo").await;
    clock(s, &c.t, Method::PUT, "", json!({"frozen_at": at})).await;
    set_runs(s, &c.t, runs).await;
    c
}

/// `PUT .../policy {"runs": runs}`, asserting 200 and the policy answered.
async fn set_runs(s: &TestServer, t: &TestTenant, runs: &str) {
    let path = format!("/sandbox/v1/tenants/{}/policy", t.id);
    let r = s
        .admin_call(Method::PUT, &path, Some(&json!({ "runs": runs })))
        .await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["runs"], runs, "{v}");
}

/// Sends `method .../clock{suffix}`, asserting 200; answers the JSON.
async fn clock(s: &TestServer, t: &TestTenant, method: Method, suffix: &str, body: Value) -> Value {
    let path = format!("/sandbox/v1/tenants/{}/clock{suffix}", t.id);
    let r = s.admin_call(method.clone(), &path, Some(&body)).await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}

/// Advances the clock by `seconds`; answers the kinds of the transitions that ran, in order.
async fn advance(s: &TestServer, t: &TestTenant, seconds: i64) -> Vec<String> {
    let v = clock(
        s,
        t,
        Method::POST,
        "/advance",
        json!({ "seconds": seconds }),
    )
    .await;
    v["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .map(|x| text(x, "kind"))
        .collect()
}

/// A run's status as `GET path` answers it.
async fn status(c: &Rev<'_>, path: &str) -> String {
    text(&c.get_ok(path).await, "status")
}

#[tokio::test]
async fn a_polling_client_sees_each_state_in_order_and_results_only_when_complete() {
    let s = TestServer::start().await;
    let at_once = tenant(&s, "at-once", "AT_ONCE", "2026-12-01T12:00:00Z").await;
    let c = tenant(&s, "with-clock", "WITH_CLOCK", "2026-12-01T12:00:00Z").await;

    // The collector run answers NOT_STARTED: nothing started, nothing collected.
    let run = c.collect(autumn_run(json!([]))).await;
    let id = run["id"].as_i64().expect("id");
    let path = format!("/collector-runs/{id}");
    assert_eq!(run["status"], "NOT_STARTED", "{run}");
    assert!(
        run["date_started"].is_null() && run["date_ended"].is_null(),
        "{run}"
    );
    assert_eq!(c.get_ok(&path).await, run);
    c.assert_totals(&[("/ledgers/chargeinfos", 0)]).await;
    // One collector run at a time: the next waits for this one.
    let msg = c
        .error(
            Method::POST,
            "/collector-runs",
            Some(autumn_run(json!([]))),
            409,
        )
        .await;
    assert!(
        msg.contains(&format!("collector run {id} has not finished")),
        "{msg}"
    );

    // A second of the clock starts it; it runs two more.
    assert_eq!(advance(&s, &c.t, 1).await, ["collector_run.started"]);
    let running = c.get_ok(&path).await;
    assert_eq!(running["status"], "RUNNING", "{running}");
    assert_eq!(running["date_started"], "2026-12-01T06:00:01-06:00");
    assert!(running["date_ended"].is_null(), "{running}");
    c.assert_totals(&[("/ledgers/chargeinfos", 0)]).await;
    assert_eq!(advance(&s, &c.t, 1).await, Vec::<String>::new());
    assert_eq!(status(&c, &path).await, "RUNNING");
    c.assert_totals(&[("/ledgers/chargeinfos", 0), (&format!("{path}/errors"), 0)])
        .await;
    assert_eq!(advance(&s, &c.t, 1).await, ["collector_run.ended"]);
    let done = c.get_ok(&path).await;
    assert_eq!(done["status"], "COMPLETE", "{done}");
    assert_eq!(done["date_ended"], "2026-12-01T06:00:03-06:00");
    assert_eq!(done["num_errors"], 0);

    // What it collected is what the same run collects at once.
    let once = at_once.collect(autumn_run(json!([]))).await;
    assert_eq!(once["status"], "COMPLETE", "{once}");
    assert_eq!(once["date_started"], once["date_ended"]);
    let collected = at_once.paged("/ledgers/chargeinfos").await.1;
    assert!(collected > 0);
    c.assert_totals(&[("/ledgers/chargeinfos", collected)])
        .await;

    // A ledger run: NOT_STARTED and listed so, no journal entries until it has ended; one
    // advance past both of its steps takes them in order.
    let gl = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let gl_id = gl["id"].as_i64().expect("id");
    assert_eq!(gl["status"], "NOT_STARTED", "{gl}");
    c.assert_totals(&[
        ("/glruns?status=NOT_STARTED", 1),
        (&format!("/glruns/{gl_id}/journal-entries"), 0),
    ])
    .await;
    let ledger_runs = c.get_ok("/ledgers/1/glruns").await;
    assert_eq!(ledger_runs[0]["status"], "NOT_STARTED", "{ledger_runs}");
    let (states, _, _, _) = c.paged("/ledgers/1/chargeinfos").await;
    assert!(
        states
            .iter()
            .all(|x| x["charge_info_state_values"].is_null()),
        "no record is posted before the run ends"
    );
    assert_eq!(advance(&s, &c.t, 1).await, ["gl_run.started"]);
    c.assert_totals(&[
        ("/glruns?status=RUNNING", 1),
        (&format!("/glruns/{gl_id}/journal-entries"), 0),
    ])
    .await;
    assert_eq!(advance(&s, &c.t, 5).await, ["gl_run.ended"]);
    let posted = c.get_ok(&format!("/glruns/{gl_id}")).await;
    assert_eq!(posted["status"], "COMPLETE", "{posted}");
    let once = at_once
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    assert_eq!(once["status"], "COMPLETE", "{once}");
    let entries = at_once
        .paged(&format!("/glruns/{}/journal-entries", once["id"]))
        .await
        .1;
    assert!(entries > 0);
    c.assert_totals(&[
        (&format!("/glruns/{gl_id}/journal-entries"), entries),
        ("/glruns?status=COMPLETE", 1),
    ])
    .await;

    // Both steps inside one advance: started and ended, in that order.
    let again = c.collect(autumn_run(json!(["invoices"]))).await;
    assert_eq!(again["status"], "NOT_STARTED");
    assert_eq!(
        advance(&s, &c.t, 60).await,
        ["collector_run.started", "collector_run.ended"]
    );
    assert_eq!(
        status(&c, &format!("/collector-runs/{}", again["id"])).await,
        "COMPLETE"
    );
}

#[tokio::test]
async fn a_run_that_fails_ends_error_with_its_errors_shown_only_then() {
    let s = TestServer::start().await;
    let c = tenant(&s, "errors", "WITH_CLOCK", "2027-03-01T12:00:00Z").await;
    // Usage of February 2027: no period of the ledger's calendar covers it.
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2027-02-10T12:00:00.000Z",
        &[("6", 1)],
        false,
    );
    let mut body = autumn_run(json!(["usage-charges"]));
    body["data_fetch_to_date"] = json!("2027-03-01");
    c.collect(body).await;
    advance(&s, &c.t, 3).await;

    let gl = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2027-03-01"}))
        .await;
    let path = format!("/glruns/{}", gl["id"]);
    assert_eq!(gl["status"], "NOT_STARTED");
    advance(&s, &c.t, 2).await;
    assert_eq!(status(&c, &path).await, "RUNNING");
    c.assert_totals(&[(&format!("{path}/errors"), 0), ("/glruns?status=ERROR", 0)])
        .await;
    advance(&s, &c.t, 1).await;
    let ended = c.get_ok(&path).await;
    assert_eq!(ended["status"], "ERROR", "{ended}");
    assert_eq!(ended["num_errors"], 1);
    let (errors, _, _, _) = c.paged(&format!("{path}/errors")).await;
    assert_eq!(errors.len(), 1);
    let message = text(&errors[0], "error_message");
    assert!(
        message.contains("no accounting period covers 2027-02-10"),
        "{message}"
    );
    assert_eq!(c.paged("/glruns?status=ERROR").await.1, 1);

    // A ledger made INACTIVE while its run waits: the run ends ERROR, posting nothing.
    let gl = c
        .gl_run(json!({"ledger_id": 2, "run_to_date": "2026-11-30"}))
        .await;
    let path = format!("/glruns/{}", gl["id"]);
    c.expect(
        Method::PUT,
        "/ledgers/2",
        Some(json!({"status": "INACTIVE"})),
        200,
    )
    .await;
    advance(&s, &c.t, 3).await;
    let ended = c.get_ok(&path).await;
    assert_eq!(ended["status"], "ERROR", "{ended}");
    let (errors, _, _, _) = c.paged(&format!("{path}/errors")).await;
    assert!(
        text(&errors[0], "error_message").contains("ledger 2 is INACTIVE"),
        "{errors:?}"
    );
    c.assert_totals(&[(&format!("{path}/journal-entries"), 0)])
        .await;
}

#[tokio::test]
async fn on_a_real_time_clock_a_run_completes_by_itself() {
    let s = TestServer::start().await;
    // The demo tenant's clock runs on real time (no advance will move it).
    let c = Rev::new(&s, "real-time", "demo").await;
    set_runs(&s, &c.t, "WITH_CLOCK").await;
    let run = c.collect(autumn_run(json!(["invoices"]))).await;
    assert_eq!(run["status"], "NOT_STARTED", "{run}");
    let path = format!("/collector-runs/{}", run["id"]);
    let mut seen = vec!["NOT_STARTED".to_string()];
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let now = c.get_ok(&path).await;
        let status = text(&now, "status");
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if status == "COMPLETE" {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} after 60 s: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // A poll may miss RUNNING on a slow machine, never see the states out of order.
    assert!(
        seen == ["NOT_STARTED", "RUNNING", "COMPLETE"] || seen == ["NOT_STARTED", "COMPLETE"],
        "{seen:?}"
    );
    // Each step is stamped at its own instant, wherever the poll noticed it.
    let started = chrono::DateTime::parse_from_rfc3339(&text(&done, "date_started")).unwrap();
    let ended = chrono::DateTime::parse_from_rfc3339(&text(&done, "date_ended")).unwrap();
    assert_eq!((ended - started).num_seconds(), 2, "{done}");
    assert!(c.paged("/ledgers/chargeinfos").await.1 > 0);
}
