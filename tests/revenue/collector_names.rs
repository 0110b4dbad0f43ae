//! Collector runs accept the platform's collector operation names (INSERT_SERVICES, ...)
//! alongside the catalogue's own, as the platform names them: each platform name collects the
//! source of its category, the run shows the names as the client sent them, and an unknown
//! name is a 400 that lists both kinds.

use crate::chain::autumn_run;
use e2e::revenue::Rev;
use e2e::TestServer;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn platform_operation_names_collect_their_category() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    c.insert_usage(
        "srv-compute-0001",
        Some(1),
        "2026-09-15T12:00:00.000Z",
        &[("1.20", 1)],
        false,
    );

    let run = c.collect(autumn_run(json!(["INSERT_INVOICES"]))).await;
    assert_eq!(run["status"], "COMPLETE", "{run}");
    assert_eq!(run["collector_operations"], json!(["INSERT_INVOICES"]));
    let (_, all, _, _) = c.paged("/ledgers/chargeinfos").await;
    let (_, invoices, _, _) = c
        .paged("/ledgers/chargeinfos?charge_info_type=INVOICE")
        .await;
    let (_, lines, _, _) = c
        .paged("/ledgers/chargeinfos?charge_info_type=INVOICE_AMOUNT")
        .await;
    assert!(invoices > 0);
    assert_eq!(
        all,
        invoices + lines,
        "only invoices (with their lines: one AMOUNT line each in the demo) were collected"
    );

    // INSERT_SERVICES collects the services' rated usage; names of both kinds mix
    let run = c
        .collect(autumn_run(json!([
            "INSERT_SERVICES",
            "payments",
            "INSERT_ADJUSTMENTS"
        ])))
        .await;
    assert_eq!(run["status"], "COMPLETE", "{run}");
    assert_eq!(
        run["collector_operations"],
        json!(["INSERT_SERVICES", "payments", "INSERT_ADJUSTMENTS"])
    );
    for kind in ["USAGE_EVENT", "USAGE", "PAYMENT", "ADJUSTMENT"] {
        let (_, total, _, _) = c
            .paged(&format!("/ledgers/chargeinfos?charge_info_type={kind}"))
            .await;
        assert!(total > 0, "{kind} collected");
    }

    let message = c
        .error(
            Method::POST,
            "/collector-runs",
            Some(autumn_run(json!(["INSERT_WIDGETS"]))),
            400,
        )
        .await;
    assert!(
        message.contains("INSERT_WIDGETS")
            && message.contains("INSERT_SERVICES")
            && message.contains("usage-charges"),
        "{message}"
    );
}
