//! Surface C fed by Surface B: usage posted and rated over `POST /billing/2/usage-events/bulk`,
//! collected into charge info, an overwrite reversed by the next collector run, posted to a
//! ledger (a closed period moving the postings forward) and the run deleted again.

use e2e::revenue::{text, Rev};
use e2e::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

/// Posts usage events over Surface B and answers the rated events.
async fn post_usage(c: &Rev<'_>, mode: &str, events: Value) -> Vec<Value> {
    let r =
        c.s.client
            .post(c.s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &c.t.api_key)
            .json(&json!({"mode": mode, "usage_events": events}))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["erred_events"], json!([]), "{v}");
    v["rated_events"].as_array().unwrap().clone()
}

/// A JSON number's exact text.
fn num(v: &Value) -> String {
    assert!(v.is_number(), "{v}");
    v.to_string()
}

#[tokio::test]
async fn posted_usage_flows_into_the_ledger_and_overwrites_are_reversed() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let compute = |hours: i64| {
        json!({"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR",
               "usage_amount": hours, "start_time": "2026-09-15T10:00:00Z",
               "reference_id": "r1", "sequence_id": "1"})
    };
    let api = json!({"service_resource_identifier": "api-0001", "usage_uom": "COUNT",
                     "usage_amount": 500, "start_time": "2026-10-02T10:00:00Z"});
    let rated = post_usage(&c, "FAIL_ON_EXISTING", json!([compute(10), api])).await;
    let (first_charge, api_charge) = (
        num(&rated[0]["total_charge"]),
        num(&rated[1]["total_charge"]),
    );

    // the window runs from September to now: it holds the events and, later, the overwrite
    let run = json!({"type": "AUTO", "collector_operations": ["usage-charges"],
                     "data_fetch_from_date": "2026-09-01"});
    let r = c.collect(run.clone()).await;
    assert_eq!(r["status"], "COMPLETE", "{r}");
    let (usage, total, _, _) = c.paged("/ledgers/chargeinfos?charge_info_type=USAGE").await;
    assert_eq!(total, 2);
    assert_eq!(num(&usage[0]["ci_values"]["charge_amount"]), first_charge);
    assert_eq!(usage[0]["ci_values"]["charge_category"], "Compute Usage");
    assert_eq!(num(&usage[1]["ci_values"]["charge_amount"]), api_charge);
    assert_eq!(text(&usage[1], "billing_account_num"), "ACC-1002");

    // an overwrite voids the first event; the next run collects the new one and reverses the old
    let rated = post_usage(&c, "OVERWRITE_ON_EXISTING", json!([compute(20)])).await;
    let second_charge = num(&rated[0]["total_charge"]);
    let r = c.collect(run.clone()).await;
    assert_eq!(r["status"], "COMPLETE");
    let (usage, total, _, _) = c.paged("/ledgers/chargeinfos?charge_info_type=USAGE").await;
    assert_eq!(total, 4, "2 charges, the new one and the reversal");
    let reversal = usage
        .iter()
        .find(|u| text(u, "core_id").starts_with("core:usage_charge_void:"))
        .expect("a reversal record");
    assert_eq!(
        num(&reversal["ci_values"]["charge_amount"]),
        format!("-{first_charge}")
    );
    assert_eq!(num(&usage[2]["ci_values"]["charge_amount"]), second_charge);
    // once more: nothing new
    c.collect(run).await;
    assert_eq!(c.paged("/ledgers/chargeinfos").await.1, 8);

    // September is closed in the US ledger: all four postings land in October
    let l = c.get_ok("/ledgers/1").await;
    let year = &l["calendar"]["years"][1];
    let periods = year["accounting-periods"].as_array().unwrap();
    let (sep, oct) = (&periods[8], &periods[9]);
    assert_eq!(
        (sep["name"].as_str(), oct["name"].as_str()),
        (Some("2026-09"), Some("2026-10"))
    );
    c.expect(
        Method::PUT,
        &format!(
            "/ledgers/1/calendar/years/{}/accounting-periods/{}/close",
            year["id"], sep["id"]
        ),
        None,
        200,
    )
    .await;
    let glrun = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-10-31"}))
        .await;
    assert_eq!(glrun["status"], "COMPLETE", "{glrun}");
    let (entries, total, _, _) = c
        .paged(&format!("/glruns/{}/journal-entries", glrun["id"]))
        .await;
    assert_eq!(total, 4);
    assert!(entries.iter().all(|e| e["period_id"] == oct["id"]));
    // net usage revenue: credits minus debits of 4000 equals the two live charges
    let revenue: Vec<(String, String)> = entries
        .iter()
        .map(|e| (text(e, "credit_account"), num(&e["amount"])))
        .collect();
    let reversed = entries
        .iter()
        .filter(|e| e["debit_account"] == "4000 Usage Revenue")
        .map(|e| num(&e["amount"]))
        .collect::<Vec<_>>();
    assert_eq!(
        reversed,
        vec![first_charge.clone()],
        "the reversal debits revenue"
    );
    let credited: Vec<&str> = revenue
        .iter()
        .filter(|(account, _)| account == "4000 Usage Revenue")
        .map(|(_, amount)| amount.as_str())
        .collect();
    assert_eq!(
        credited,
        vec![
            first_charge.as_str(),
            second_charge.as_str(),
            api_charge.as_str()
        ]
    );

    // deleting the run takes its journal entries and states with it
    c.expect(
        Method::DELETE,
        &format!("/glruns/{}", glrun["id"]),
        None,
        200,
    )
    .await;
    c.error(
        Method::GET,
        &format!("/glruns/{}/journal-entries", glrun["id"]),
        None,
        404,
    )
    .await;
    let (states, _, _, _) = c.paged("/ledgers/1/chargeinfos").await;
    assert!(states
        .iter()
        .all(|x| x["charge_info_state_values"].is_null()));
}
