//! Surface C: the revenue chain. Rated usage and billing activity -> collector run -> charge
//! info -> ledger run -> journal entries (closed periods moving postings forward) -> run
//! deleted with its results; and the 409, 412 and 503 meanings. What the chain leaves to
//! read (charge info lists, SVS replication, the collector catalogue) is in `chargeinfo.rs`.

use e2e::revenue::{text, Rev};
use e2e::{body_refusals, get_refusals, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// The window covering all of the demo's billing activity (Sep..Nov 2026).
pub(crate) fn autumn_run(operations: Value) -> Value {
    json!({
        "type": "AUTO",
        "collector_operations": operations,
        "data_fetch_from_date": "2026-09-01T00:00:00Z",
        "data_fetch_to_date": "2026-12-01T00:00:00Z",
        "overlap_fetch_time": 0
    })
}

/// The id of a period of ledger 1's FY2026 by name (`2026-09`), with the year id.
async fn us_period(c: &Rev<'_>, name: &str) -> (i64, i64) {
    let l = c.get_ok("/ledgers/1").await;
    let y = &l["calendar"]["years"][1];
    let p = y["accounting-periods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("period {name}"));
    (y["id"].as_i64().unwrap(), p["id"].as_i64().unwrap())
}

async fn set_open(c: &Rev<'_>, period: &str, open: bool) {
    let (yid, pid) = us_period(c, period).await;
    let verb = if open { "open" } else { "close" };
    c.expect(
        Method::PUT,
        &format!("/ledgers/1/calendar/years/{yid}/accounting-periods/{pid}/{verb}"),
        None,
        200,
    )
    .await;
}

pub(crate) fn ci(v: &Value, key: &str) -> Value {
    v["ci_values"][key].clone()
}

#[tokio::test]
async fn full_chain_usage_to_journal_entries_and_back() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    // rated usage of ACC-1001 (category 1, in the US ledger) on 15 Sep 2026, two charges
    let (event, charges) = c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-09-15T12:00:00.000Z",
        &[("1.20", 1), ("0.0000000000000000000000000001", 9)],
        false,
    );
    // a voided event is not collected; an event without an account is a run error
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-09-16T12:00:00.000Z",
        &[("5", 1)],
        true,
    );
    let (orphan, _) = c.insert_usage(
        "nobody",
        None,
        "2026-09-17T12:00:00.000Z",
        &[("3", 1)],
        false,
    );
    // usage outside the window (by more than the overlap) is not collected
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-08-31T22:59:59.000Z",
        &[("7", 1)],
        false,
    );
    // inside the window only thanks to overlap_fetch_time (1 hour before its start)
    let (early, _) = c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-08-31T23:30:00.000Z",
        &[("2", 1)],
        false,
    );

    let mut body = autumn_run(json!([]));
    body["overlap_fetch_time"] = json!(3600);
    let run = c.collect(body).await;
    let run_id = run["id"].as_i64().unwrap();
    assert_eq!(run["status"], "ERROR", "{run}");
    assert_eq!(run["num_errors"], 1);
    assert_eq!(run["run_trigger_type"], "ON_DEMAND");
    assert_eq!(run["tenant_id"], shared::tenants::number(&c.t.id));
    assert_eq!(run["gl_run_mode_id"], 2, "the demo's COLLECTOR_AUTO mode");
    assert_eq!(
        run["collector_operations"],
        json!(["usage-charges", "invoices", "payments", "adjustments"])
    );
    assert_eq!(run["overlap_fetch_time"], 3600);
    assert_eq!(run["data_fetch_from_date"], "2026-08-31T19:00:00-05:00");
    assert_eq!(c.get_ok(&format!("/collector-runs/{run_id}")).await, run);
    let (errors, total, _, _) = c.paged(&format!("/collector-runs/{run_id}/errors")).await;
    assert_eq!(total, 1);
    assert_eq!(errors[0]["collector_run_id"], run_id);
    assert!(errors[0]["gl_run_id"].is_null());
    assert!(text(&errors[0], "error_message").contains(&format!("usage event {orphan}")));

    // what was collected: 2 usage events (parents), their 3 charges, 5 invoices (parents),
    // their 5 lines (one AMOUNT line each: the demo's invoices are made with their amount
    // only), 2 payments, 3 adjustments
    c.assert_totals(&[
        ("/ledgers/chargeinfos", 20),
        ("/ledgers/chargeinfos?charge_info_type=USAGE_EVENT", 2),
        ("/ledgers/chargeinfos?charge_info_type=USAGE", 3),
        ("/ledgers/chargeinfos?charge_info_type=INVOICE", 5),
        ("/ledgers/chargeinfos?charge_info_type=INVOICE_AMOUNT", 5),
        ("/ledgers/chargeinfos?charge_info_type=PAYMENT", 2),
        ("/ledgers/chargeinfos?charge_info_type=ADJUSTMENT", 3),
        ("/ledgers/chargeinfos?is_parent=true", 7),
        ("/ledgers/chargeinfos?is_parent=false", 13),
    ])
    .await;
    let (parents, _, _, _) = c.paged("/ledgers/chargeinfos?is_parent=true").await;
    let parent = parents
        .iter()
        .find(|p| text(p, "core_id") == format!("core:usage_event:{event}"))
        .expect("the event's parent record")
        .clone();
    let parent_id = parent["id"].as_i64().unwrap();
    let (kids, _, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?parent_id={parent_id}"))
        .await;
    assert_eq!(kids.len(), 2);
    assert_eq!(
        text(&kids[0], "core_id"),
        format!("core:usage_charge:{}", charges[0])
    );
    // exact amounts survive the whole way
    for (query, exact) in [
        (
            format!("parent_id={parent_id}"),
            "0.0000000000000000000000000001",
        ),
        (
            "is_parent=true".to_string(),
            "1.2000000000000000000000000001",
        ),
    ] {
        let raw = c
            .call(Method::GET, &format!("/ledgers/chargeinfos?{query}"), None)
            .await
            .text()
            .await
            .unwrap();
        assert!(raw.contains(&format!("\"charge_amount\":{exact}")), "{raw}");
    }
    assert_eq!(ci(&kids[0], "charge_category"), "Compute Usage");
    assert_eq!(ci(&kids[0], "service_id"), 1);
    assert_eq!(ci(&kids[0], "product_name"), "Cloud Compute");
    assert_eq!(text(&kids[0], "billing_account_num"), "ACC-1001");
    assert_eq!(
        text(&kids[0], "created_by"),
        format!("collector-run-{run_id}")
    );
    c.assert_totals(&[
        ("/ledgers/chargeinfos?charge_category=API%20Usage", 1),
        // 2 invoices with their lines, 1 payment, 1 adjustment; by account number and by
        // account id
        ("/ledgers/chargeinfos?billing_account=ACC-1002", 6),
        ("/ledgers/chargeinfos?billing_account=2", 6),
        ("/ledgers/chargeinfos?invoice_number=INV-0003", 2),
        ("/ledgers/chargeinfos?service_id=1", 5),
        ("/ledgers/chargeinfos?product_id=1", 5),
        ("/ledgers/chargeinfos?order_number=ORD-1", 0),
    ])
    .await;
    let early_parent = c
        .paged("/ledgers/chargeinfos?charge_info_type=USAGE_EVENT")
        .await
        .0
        .into_iter()
        .any(|p| text(&p, "core_id") == format!("core:usage_event:{early}"));
    assert!(early_parent, "collected through the overlap");

    // the same window again collects nothing twice
    let again = c.collect(autumn_run(json!(["invoices", "payments"]))).await;
    assert_eq!(again["status"], "COMPLETE");
    assert_eq!(again["num_errors"], 0);
    c.assert_totals(&[("/ledgers/chargeinfos", 20)]).await;
    let (runs, total, _, _) = c.paged("/collector-runs").await;
    assert_eq!((total, runs[0]["id"].as_i64()), (2, again["id"].as_i64()));

    // close September: its usage posts into October
    set_open(&c, "2026-09", false).await;
    let glrun = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let gl_id = glrun["id"].as_i64().unwrap();
    assert_eq!(glrun["status"], "COMPLETE", "{glrun}");
    assert_eq!(glrun["num_errors"], 0);
    assert_eq!(glrun["gl_run_mode_id"], 1, "the ledger's actuals mode");
    assert_eq!(
        glrun["run_to_date"], "2026-12-01T00:00:00-06:00",
        "through the end of the day"
    );
    assert!(glrun["date_started"].is_string() && glrun["date_ended"].is_string());
    let (entries, _, _, _) = c
        .paged(&format!("/glruns/{gl_id}/journal-entries?page_size=50"))
        .await;
    let (_, oct) = us_period(&c, "2026-10").await;
    let charge_ids: Vec<i64> = kids.iter().map(|k| k["id"].as_i64().unwrap()).collect();
    let usage_entries: Vec<&Value> = entries
        .iter()
        .filter(|e| charge_ids.contains(&e["charge_info_id"].as_i64().unwrap()))
        .collect();
    assert_eq!(usage_entries.len(), 2);
    for e in &usage_entries {
        assert_eq!(e["period_id"], oct, "moved out of closed September");
        assert_eq!(e["posting_date"], "2026-10-01");
        assert_eq!(e["debit_account"], "1200 Unbilled Receivables");
        assert_eq!(e["credit_account"], "4000 Usage Revenue");
    }
    assert_eq!(usage_entries[0]["amount"].to_string(), "1.2");
    // parents are posted through their children; payments swap the accounts
    let parent_ids: Vec<i64> = parents.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    assert!(entries
        .iter()
        .all(|e| !parent_ids.contains(&e["charge_info_id"].as_i64().unwrap())));
    assert!(entries.iter().any(|e| e["debit_account"] == "1000 Cash"));

    // the per-ledger list shows the states; gl_event_id selects this run's records
    let (mine, total, _, _) = c
        .paged(&format!(
            "/ledgers/1/chargeinfos?gl_event_id={gl_id}&page_size=50"
        ))
        .await;
    assert_eq!(
        total as usize,
        entries.len(),
        "every handled record was posted"
    );
    assert!(mine
        .iter()
        .all(|m| m["charge_info_state_values"] == "POSTED"));
    let (all, _, _, _) = c.paged("/ledgers/1/chargeinfos?page_size=50").await;
    assert!(
        all.iter().any(|m| m["charge_info_state_values"].is_null()),
        "parents have no state"
    );
    assert!(all
        .iter()
        .all(|m| m.get("charge_info_state_values").is_some()));
    let (plain, _, _, _) = c.paged("/ledgers/chargeinfos").await;
    assert!(plain
        .iter()
        .all(|m| m.get("charge_info_state_values").is_none()));
    assert_eq!(text(&mine[0], "updated_by"), format!("gl-run-{gl_id}"));

    // a second run finds nothing new
    let second = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30", "gl_run_mode_id": 1}))
        .await;
    assert_eq!(second["status"], "COMPLETE");
    assert_eq!(
        c.paged(&format!("/glruns/{}/journal-entries", second["id"]))
            .await
            .1,
        0
    );

    // lists of runs
    let runs = c.get_ok("/ledgers/1/glruns").await;
    assert_eq!(runs.as_array().unwrap().len(), 2);
    c.assert_totals(&[("/glruns?status=COMPLETE", 2), ("/glruns?status=ERROR", 0)])
        .await;
    c.error(Method::GET, "/glruns?status=DONE", None, 400).await;
    assert_eq!(c.get_ok(&format!("/glruns/{gl_id}")).await, glrun);

    // deleting the run removes all its results
    c.expect(Method::DELETE, &format!("/glruns/{gl_id}"), None, 200)
        .await;
    let (run, entries_of_run) = (
        format!("/glruns/{gl_id}"),
        format!("/glruns/{gl_id}/journal-entries"),
    );
    c.assert_refused(&[
        (Method::GET, &run, None, 404, ""),
        (Method::GET, &entries_of_run, None, 404, ""),
        (Method::DELETE, &run, None, 404, ""),
    ])
    .await;
    assert_eq!(
        c.paged(&format!("/ledgers/1/chargeinfos?gl_event_id={gl_id}"))
            .await
            .1,
        0
    );
    let (all, _, _, _) = c.paged("/ledgers/1/chargeinfos?page_size=50").await;
    assert!(all.iter().all(|m| m["charge_info_state_values"].is_null()));
    assert_eq!(
        c.get_ok("/ledgers/1/glruns")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // ... so the next run posts them again
    let third = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30T23:59:59-06:00"}))
        .await;
    assert_eq!(
        c.paged(&format!("/glruns/{}/journal-entries", third["id"]))
            .await
            .1 as usize,
        entries.len()
    );
}

#[tokio::test]
async fn closed_periods_without_a_later_open_one_are_run_errors() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-12-10T12:00:00.000Z",
        &[("4", 1)],
        false,
    );
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2027-02-10T12:00:00.000Z",
        &[("6", 1)],
        false,
    );
    let mut body = autumn_run(json!(["usage-charges"]));
    body["data_fetch_to_date"] = json!("2027-03-01");
    let run = c.collect(body).await;
    assert_eq!(run["status"], "COMPLETE");
    set_open(&c, "2026-12", false).await;

    let glrun = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2027-03-01T00:00:00Z"}))
        .await;
    assert_eq!(glrun["status"], "ERROR");
    assert_eq!(glrun["num_errors"], 2);
    let gl_id = glrun["id"].as_i64().unwrap();
    let (errors, total, _, _) = c.paged(&format!("/glruns/{gl_id}/errors")).await;
    assert_eq!(total, 2);
    assert!(errors
        .iter()
        .all(|e| e["gl_run_id"] == gl_id && e["collector_run_id"].is_null()));
    let messages: Vec<String> = errors.iter().map(|e| text(e, "error_message")).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("is closed and no later period is open")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("no accounting period covers 2027-02-10")),
        "{messages:?}"
    );
    assert_eq!(c.paged("/glruns?status=ERROR").await.1, 1);
    let (states, _, _, _) = c
        .paged(&format!("/ledgers/1/chargeinfos?gl_event_id={gl_id}"))
        .await;
    assert!(states
        .iter()
        .all(|x| x["charge_info_state_values"] == "ERROR"));

    // reopening December lets a later run post what failed
    set_open(&c, "2026-12", true).await;
    let retry = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2027-01-01"}))
        .await;
    assert_eq!(retry["status"], "COMPLETE");
    assert_eq!(
        c.paged(&format!("/glruns/{}/journal-entries", retry["id"]))
            .await
            .1,
        1
    );
    c.error(Method::GET, "/glruns/999/errors", None, 404).await;
    c.error(Method::GET, "/collector-runs/999/errors", None, 404)
        .await;
}

#[tokio::test]
async fn conflicts_and_failed_preconditions() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let run = json!({"ledger_id": 1, "run_to_date": "2026-11-30"});

    // 412: an INACTIVE ledger does not run
    let inactive = json!({"ledger_id": 3, "run_to_date": "2026-11-30"});
    c.assert_refused(&[(Method::POST, "/glruns", Some(inactive), 412, "INACTIVE")])
        .await;
    // 412: a calendar without an open period (a ledger without years, then one closed year)
    let l = c
        .expect(
            Method::POST,
            "/ledgers",
            Some(json!({"name": "Closed", "billing_account_category_ids": [1]})),
            201,
        )
        .await;
    let lid = l["id"].as_i64().unwrap();
    let body = json!({"ledger_id": lid, "run_to_date": "2026-11-30"});
    c.error(Method::POST, "/glruns", Some(body.clone()), 412)
        .await;
    c.expect(
        Method::POST,
        &format!("/ledgers/{lid}/calendar/years"),
        Some(json!({"name": "FY", "start_date": "2026-01-01", "end_date": "2026-12-31",
            "accounting-periods": [{"name": "all", "start_date": "2026-01-01", "end_date": "2026-12-31", "open": false}]})),
        200,
    )
    .await;
    let msg = c.error(Method::POST, "/glruns", Some(body), 412).await;
    assert!(msg.contains("no open accounting period"), "{msg}");
    assert_eq!(c.paged("/glruns").await.1, 0, "nothing was created");

    // 404 / 400 on the body
    let bodies = vec![
        (json!({"ledger_id": 99, "run_to_date": "2026-11-30"}), 404),
        (
            json!({"ledger_id": 1, "run_to_date": "2026-11-30", "gl_run_mode_id": 9}),
            404,
        ),
        (json!({"ledger_id": 1, "run_to_date": "soon"}), 400),
        (json!({"ledger_id": "1", "run_to_date": "2026-11-30"}), 400),
        (json!({"ledger_id": 1}), 400),
    ];
    c.assert_refused(&body_refusals(Method::POST, "/glruns", bodies))
        .await;

    // 409: a run of the same ledger that has not finished (as a run in another process
    // would be while it works)
    let db = s.state.store.tenant_db(&c.t.id).unwrap();
    db.write_blocking(|tx| {
        tx.execute(
            "INSERT INTO gl_runs (status, run_trigger_type, ledger_id, run_to_date)
             VALUES ('RUNNING', 'SCHEDULED', 1, '2026-10-01T00:00:00.000Z')",
            [],
        )?;
        tx.execute(
            "INSERT INTO collector_runs (status, run_trigger_type, type)
             VALUES ('RUNNING', 'SCHEDULED', 'AUTO')",
            [],
        )?;
        Ok(())
    })
    .unwrap();
    let msg = c
        .error(Method::POST, "/glruns", Some(run.clone()), 409)
        .await;
    assert!(msg.contains("has not finished"), "{msg}");
    assert_eq!(c.paged("/glruns?status=RUNNING").await.1, 1);
    // another ledger is not blocked
    let eu = c
        .gl_run(json!({"ledger_id": 2, "run_to_date": "2026-11-30"}))
        .await;
    assert_eq!(eu["status"], "COMPLETE");
    c.error(
        Method::POST,
        "/collector-runs",
        Some(autumn_run(json!([]))),
        409,
    )
    .await;

    // collector run input
    let tenant2 = Rev::new(&s, "empty", "empty").await;
    let msg = tenant2
        .error(
            Method::POST,
            "/collector-runs",
            Some(autumn_run(json!([]))),
            412,
        )
        .await;
    assert!(msg.contains("catalogue is empty"), "{msg}");
    db.write_blocking(|tx| {
        tx.execute("UPDATE collector_runs SET status = 'ERROR'", [])?;
        Ok(())
    })
    .unwrap();
    let bodies = [
        json!({"type": "SOMETIMES"}),
        json!({"type": "AUTO", "collector_operations": ["nope"]}),
        json!({"type": "AUTO", "overlap_fetch_time": -1}),
        json!({"type": "AUTO", "overlap_fetch_time": 2678401}),
        json!({"type": "AUTO", "data_fetch_from_date": "2026-12-01", "data_fetch_to_date": "2026-11-01"}),
        json!({"type": "AUTO", "data_fetch_from_date": "whenever"}),
        json!({"collector_operations": []}),
    ];
    let bodies = bodies.into_iter().map(|bad| (bad, 400)).collect();
    let mut cases = body_refusals(Method::POST, "/collector-runs", bodies);
    cases.extend(get_refusals(&[
        ("/collector-runs/777", 404),
        ("/collector-runs?page_size=99", 400),
    ]));
    c.assert_refused(&cases).await;
    // a catalogue collector without a source is a run error, not a failure
    db.write_blocking(|tx| {
        tx.execute(
            "INSERT INTO collectors (name, friendly_name, \"group\", category)
             VALUES ('orders', 'Orders', 'SALES', 'ORDER')",
            [],
        )?;
        Ok(())
    })
    .unwrap();
    let r = c.collect(json!({"type": "AUTO", "collector_operations": ["orders"],
                "data_fetch_from_date": "2026-10-01", "data_fetch_to_date": "2026-11-01T00:00:00Z"})).await;
    assert_eq!(
        (r["status"].as_str(), r["num_errors"].as_i64()),
        (Some("ERROR"), Some(1))
    );
    // the next run's window starts where the last one ended
    let r = c
        .collect(json!({"type": "MANUAL", "collector_operations": ["invoices"]}))
        .await;
    assert_eq!(r["data_fetch_from_date"], "2026-10-31T19:00:00-05:00");
}
