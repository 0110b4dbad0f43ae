//! Fixture documents over HTTP: a tenant created with its clock set (`"clock"`) gets the
//! demo's relative dates resolved against that clock, so a demo created on any day (here,
//! years ahead, at a month's end and in two zones) holds no ACTIVE agreement service past its
//! end date and no OPEN invoice past due on an ACTIVE account, and the README tour's usage
//! rates on the tenant's own "yesterday".

use e2e::billing::{filtered, post_ok, USAGE_BULK};
use e2e::legacy::{attr, child, read, Answer, ROOT};
use e2e::{TestServer, TestTenant};
use serde_json::{json, Value};

/// The README tour's events (Surface B bulk), dated `day`.
fn tour_events(day: &str) -> Value {
    json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90, "reference_id": "vm-a", "sequence_id": "1"},
        {"start_time": format!("{day}T10:00:00"), "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150},
        {"start_time": day, "service_resource_identifier": "meter-0001", "usage_uom": "KILOWATTS_PER_HOUR", "usage_amount": 12.5},
        {"start_time": day, "service_resource_identifier": "mkt-0001", "usage_uom": "CURRENCY", "usage_amount": 19.99}
    ]})
}

/// GET a Surface A path as the tenant.
async fn xml_get(s: &TestServer, t: &TestTenant, path: &str) -> Answer {
    let r = s
        .client
        .get(s.url(&format!("{ROOT}/{path}")))
        .header("Authorization", t.basic_header())
        .send()
        .await
        .expect("request");
    read(r).await
}

#[tokio::test]
async fn a_demo_created_years_ahead_is_coherent_on_its_own_clock() {
    let s = TestServer::start().await;
    // (zone, frozen clock, the tenant's local "yesterday")
    let cases = [
        ("UTC", "2031-01-31T23:30:00Z", "2031-01-30"),
        ("America/Chicago", "2034-03-01T05:30:00Z", "2034-02-27"),
        ("Pacific/Auckland", "2029-06-15T12:00:00Z", "2029-06-15"),
    ];
    for (i, (zone, frozen, yesterday)) in cases.into_iter().enumerate() {
        let t = s
            .create_tenant_with(json!({"name": format!("ahead{i}"), "seed": "demo",
                "time_zone": zone, "clock": {"frozen_at": frozen}}))
            .await;
        // Surface B: no ACTIVE agreement service ended before the clock; some end after it.
        let stale = format!("status EQ 'ACTIVE' AND end_date LT '{frozen}'");
        let a = filtered(&s, &t, "/agreement-services", &stale).await;
        assert_eq!((a.status, a.total()), (200, 0), "{zone}: {}", a.body);
        let live = format!("status EQ 'ACTIVE' AND end_date GT '{frozen}'");
        let a = filtered(&s, &t, "/agreement-services", &live).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(
            a.total() >= 7,
            "{zone}: ACTIVE services with an end date: {}",
            a.total()
        );

        // Surface A: every OPEN invoice with an amount to pay on an ACTIVE account is due
        // after the clock.
        let list = xml_get(&s, &t, "invoices").await;
        assert_eq!(list.status, 200, "{}", list.body);
        let mut open = 0;
        let clock = chrono::DateTime::parse_from_rfc3339(frozen).unwrap();
        for inv in &list.el().children {
            let account = attr(child(inv, "billingAccount"), "eid");
            let active = attr(
                xml_get(&s, &t, &format!("billingAccounts/{account}"))
                    .await
                    .el(),
                "status",
            ) == "ACTIVE";
            if attr(inv, "status") == "OPEN" && attr(inv, "amountToPay") != "0" && active {
                open += 1;
                let due = chrono::DateTime::parse_from_rfc3339(attr(inv, "dueDate")).unwrap();
                assert!(
                    due > clock,
                    "{zone}: invoice {} due {due}",
                    attr(inv, "invoiceNum")
                );
            }
        }
        assert!(open >= 3, "{zone}: {open} open invoices checked");

        // Surface B: the README tour's events rate on the tenant's own yesterday.
        let v = post_ok(&s, &t, USAGE_BULK, &tour_events(yesterday)).await;
        let rated = v["rated_events"].as_array().expect("rated_events");
        assert_eq!(rated.len(), 4, "{zone}: {v}");
    }
}
