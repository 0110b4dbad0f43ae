//! Surface C: what the revenue chain leaves to read and clean up: the charge info lists
//! (filters, merging, the `max_records` cap) and deletions, SVS replication in JSON-lines
//! batches, and the collector catalogue with the ledger delete cascade.

use super::chain::{autumn_run, ci};
use e2e::revenue::{text, Rev};
use e2e::{body_refusals, get_refusals, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn charge_info_filters_merging_and_deletions() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let (event, _) = c.insert_usage(
        "api-0001",
        Some(2),
        "2026-10-03T08:00:00.000Z",
        &[("0.5", 9), ("0.25", 9), ("1", 1)],
        false,
    );
    // The tenant's clock stands still and moves one second between the runs: the two runs'
    // stamps differ by exactly that, whatever the machine's speed.
    s.freeze_clock(&c.t).await;
    let first = c.collect(autumn_run(json!(["usage-charges"]))).await;
    assert_eq!(first["status"], "COMPLETE");
    s.advance_clock(&c.t, 1).await;
    c.collect(autumn_run(json!(["invoices"]))).await;

    // created_from inclusive, created_to exclusive, at the exact instant of the second run
    let (invoices, _, _, _) = c
        .paged("/ledgers/chargeinfos?charge_info_type=INVOICE")
        .await;
    let second_at = text(&invoices[0], "created_on");
    let enc = second_at.replace('+', "%2B");
    let (from, _, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?created_from={enc}"))
        .await;
    assert_eq!(
        from.len(),
        10,
        "the invoices and their lines only, created at that instant"
    );
    let (to, _, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?created_to={enc}"))
        .await;
    assert_eq!(to.len(), 4, "the usage records, created before");
    assert_eq!(
        c.paged(&format!(
            "/ledgers/chargeinfos?created_from={enc}&created_to={enc}"
        ))
        .await
        .1,
        0
    );
    c.assert_refused(&get_refusals(&[
        ("/ledgers/chargeinfos?created_from=yesterday", 400),
        ("/ledgers/chargeinfos?is_parent=maybe", 400),
        ("/ledgers/chargeinfos?service_id=x", 400),
    ]))
    .await;

    // max_records caps the list before paging; default 1000, at least 1
    let (_, total, _, pages) = c
        .paged("/ledgers/chargeinfos?max_records=3&page_size=2")
        .await;
    assert_eq!((total, pages), (3, 2));
    assert_eq!(c.paged("/ledgers/chargeinfos").await.1, 14);
    c.error(Method::GET, "/ledgers/chargeinfos?max_records=0", None, 400)
        .await;

    // merged: the parent carries its children's sum, categories and ids; children vanish
    let (merged, total, _, _) = c.paged("/ledgers/merged-chargeinfos").await;
    assert_eq!(total, 6, "1 merged usage record + 5 invoices");
    let m = &merged[0];
    assert_eq!(text(m, "core_id"), format!("core:usage_event:{event}"));
    assert_eq!(ci(m, "charge_amount").to_string(), "1.75");
    assert_eq!(ci(m, "charge_category"), "API Usage, Compute Usage");
    assert_eq!(ci(m, "merged_charge_info_ids").as_array().unwrap().len(), 3);
    // The merged list takes none of is_parent, parent_id and max_records (the spec leaves
    // them out, and its document does): like any parameter it does not take, each is
    // ignored, even one the charge info list would refuse.
    for ignored in ["max_records=0", "is_parent=maybe", "parent_id=x"] {
        let (_, total, _, _) = c
            .paged(&format!("/ledgers/merged-chargeinfos?{ignored}"))
            .await;
        assert_eq!(total, 6, "{ignored}");
    }
    c.assert_totals(&[
        (
            "/ledgers/merged-chargeinfos?charge_category=Compute%20Usage",
            1,
        ),
        (
            "/ledgers/merged-chargeinfos?charge_info_type=INVOICE&billing_account=ACC-1002",
            2,
        ),
    ])
    .await;
    c.error(
        Method::GET,
        "/ledgers/merged-chargeinfos?page_number=0",
        None,
        400,
    )
    .await;

    // post, then delete the state of one record: its entry goes, the next run posts it again
    let gl = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let (entries, n, _, _) = c
        .paged(&format!(
            "/glruns/{}/journal-entries?page_size=50",
            gl["id"]
        ))
        .await;
    assert_eq!(n, 8, "3 usage charges and the 5 invoices' lines");
    let target = entries[0]["charge_info_id"].as_i64().unwrap();
    let d = c
        .expect(
            Method::DELETE,
            "/ledgers/1/chargeinfos/state",
            Some(json!({"ids": [target, 987654]})),
            200,
        )
        .await;
    assert_eq!(d, json!({"deleted": 1, "deleted_journal_entries": 1}));
    assert_eq!(
        c.paged(&format!("/glruns/{}/journal-entries", gl["id"]))
            .await
            .1,
        7
    );
    let (state, unknown) = (
        "/ledgers/1/chargeinfos/state",
        "/ledgers/99/chargeinfos/state",
    );
    c.assert_refused(&[
        (Method::DELETE, state, Some(json!({"ids": []})), 400, ""),
        (Method::DELETE, unknown, Some(json!({"ids": [1]})), 404, ""),
    ])
    .await;
    // A second later on the tenant's clock: the re-posting run's stamp follows every other.
    s.advance_clock(&c.t, 1).await;
    let again = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let (re, _, _, _) = c
        .paged(&format!("/glruns/{}/journal-entries", again["id"]))
        .await;
    assert_eq!(re.len(), 1);
    assert_eq!(re[0]["charge_info_id"], target);
    let (upd, _, _, _) = c
        .paged(&format!(
            "/ledgers/1/chargeinfos?gl_event_id={}",
            again["id"]
        ))
        .await;
    let posted_at = text(&upd[0], "updated_on").replace('+', "%2B");
    c.assert_totals(&[
        (
            &format!("/ledgers/1/chargeinfos?updated_from={posted_at}"),
            1,
        ),
        // 7 posted earlier, and 6 no run updates: the usage parent and the 5 invoices
        // (posted through their children, the lines)
        (
            &format!("/ledgers/1/chargeinfos?updated_to={posted_at}"),
            13,
        ),
    ])
    .await;

    // delete charge infos: a parent takes its children, states and journal entries along
    let parent = m["id"].as_i64().unwrap();
    let d = c
        .expect(
            Method::DELETE,
            "/ledgers/chargeinfos",
            Some(json!({"ids": [parent]})),
            200,
        )
        .await;
    assert_eq!(d["deleted"], 4);
    assert_eq!(c.paged("/ledgers/chargeinfos").await.1, 10);
    assert!(d["deleted_journal_entries"].as_i64().unwrap() >= 2);
    let (cis, bodies) = (
        "/ledgers/chargeinfos",
        vec![(json!({"ids": []}), 400), (json!({"idz": [1]}), 400)],
    );
    c.assert_refused(&body_refusals(Method::DELETE, cis, bodies))
        .await;
    // ... and a later collector run collects the source again
    c.collect(autumn_run(json!(["usage-charges"]))).await;
    assert_eq!(c.paged("/ledgers/chargeinfos").await.1, 14);
    c.error(Method::GET, "/ledgers/42/chargeinfos", None, 404)
        .await;
}

#[tokio::test]
async fn svs_replication_writes_json_lines_batches() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    c.collect(autumn_run(json!([]))).await;

    let summary = c
        .expect(Method::POST, "/replication/svs?batch_size=4", None, 201)
        .await;
    assert_eq!(summary["status"], "COMPLETE");
    assert_eq!(summary["batch_size"], 4);
    let prefix = text(&summary, "prefix");
    assert!(prefix.starts_with("analytics/svs/"), "{prefix}");
    // What the views must hold, counted from the tenant's own tables.
    let db = s.state.store.tenant_db(&c.t.id).unwrap();
    let (services, charges): (i64, i64) = db
        .read_blocking(|conn| {
            Ok(conn.query_row(
                "SELECT (SELECT COUNT(*) FROM services),
                        (SELECT COUNT(*) FROM invoices) + (SELECT COUNT(*) FROM invoice_lines)
                        + (SELECT COUNT(*) FROM payments)
                        + (SELECT COUNT(*) FROM account_adjustments)",
                [],
                |r| r.try_into(),
            )?)
        })
        .unwrap();
    assert!(services > 0 && charges > 0);
    let views = summary["views"].as_array().unwrap();
    assert_eq!(views[0]["name"], "service_view");
    assert_eq!(views[0]["rows"], services, "every service of the tenant");
    assert_eq!(views[1]["name"], "charge_view");
    assert_eq!(
        views[1]["rows"], charges,
        "every invoice with its lines, payment and adjustment"
    );
    let mut rows = 0;
    for view in views {
        let objects = view["objects"].as_array().unwrap();
        let expected = (view["rows"].as_u64().unwrap() as usize).div_ceil(4);
        assert_eq!(objects.len(), expected);
        for key in objects {
            // Objects are the tenant's files: beside its database in the data dir.
            let path = s
                .state
                .store
                .data_dir()
                .join("tenants")
                .join(&c.t.id)
                .join(key.as_str().unwrap());
            let body = std::fs::read_to_string(&path).expect("object written");
            let lines: Vec<&str> = body.lines().collect();
            assert!(!lines.is_empty() && lines.len() <= 4);
            for line in lines {
                let row: Value = serde_json::from_str(line).expect("a JSON object per line");
                assert!(row.is_object());
                rows += 1;
            }
        }
    }
    assert_eq!(rows, summary["total_rows"].as_i64().unwrap());
    for size in ["0", "10001", "many"] {
        let path = format!("/replication/svs?batch_size={size}");
        c.error(Method::POST, &path, None, 400).await;
    }
    let default = c.expect(Method::POST, "/replication/svs", None, 201).await;
    assert_eq!(default["total_objects"], 2);

    // 503: the analytics storage cannot be reached (its folder is a file here)
    let other = Rev::new(&s, "blocked", "demo").await;
    let root = s
        .state
        .store
        .data_dir()
        .join("tenants")
        .join(&other.t.id)
        .join("analytics");
    std::fs::create_dir_all(root.parent().unwrap()).unwrap();
    std::fs::write(&root, "not a folder").unwrap();
    let msg = other
        .error(Method::POST, "/replication/svs", None, 503)
        .await;
    assert!(msg.contains("temporarily unavailable"), "{msg}");
}

#[tokio::test]
async fn collector_catalogue_filters_and_ledger_delete_cascade() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    // The catalogue's four, then the five platform operations (collector_listing.rs).
    let (all, total, _, _) = c.paged("/collectors").await;
    assert_eq!(total, 9);
    assert_eq!(
        all[0],
        json!({"name": "usage-charges", "friendly_name": "Usage charges",
               "description": "Rated usage event charges", "group": "BILLING", "category": "USAGE"})
    );
    let names =
        |items: Vec<Value>| -> Vec<String> { items.iter().map(|i| text(i, "name")).collect() };
    assert_eq!(
        names(c.paged("/collectors?group=RECEIVABLES").await.0),
        vec!["payments", "adjustments"]
    );
    assert_eq!(
        names(c.paged("/collectors?category=INVOICE").await.0),
        vec!["invoices", "INSERT_INVOICES"]
    );
    assert_eq!(
        c.paged("/collectors?group=BILLING&category=PAYMENT")
            .await
            .1,
        0
    );
    let (page, total, elements, pages) = c
        .paged("/collectors?group=RECEIVABLES&page_size=1&page_number=2")
        .await;
    assert_eq!((total, elements, pages), (2, 1, 2));
    assert_eq!(names(page), vec!["adjustments"]);
    c.error(Method::GET, "/collectors?page_number=0", None, 400)
        .await;

    // deleting a ledger takes its runs, journal entries and charge info states along
    c.collect(autumn_run(json!(["invoices"]))).await;
    let run = c
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    assert_eq!(
        c.paged(&format!("/glruns/{}/journal-entries", run["id"]))
            .await
            .1,
        5
    );
    c.expect(Method::DELETE, "/ledgers/1", None, 200).await;
    let gone = format!("/glruns/{}", run["id"]);
    c.assert_refused(&get_refusals(&[(&gone, 404), ("/ledgers/1/glruns", 404)]))
        .await;
    // The runs go; charge info itself stays (5 invoices and their 5 lines).
    c.assert_totals(&[("/glruns", 0), ("/ledgers/chargeinfos", 10)])
        .await;
}
