//! `GET /collectors` lists every name a collector run accepts: the tenant's catalogue, then
//! the platform's collector operations (INSERT_SERVICES, INSERT_USAGE, INSERT_INVOICES,
//! INSERT_PAYMENTS, INSERT_ADJUSTMENTS) as built-in collectors of group PLATFORM with the
//! category they collect, for every tenant (an empty one included); the group and category
//! filters and paging cover both kinds.

use crate::chain::autumn_run;
use e2e::revenue::Rev;
use e2e::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

const OPERATIONS: [(&str, &str); 5] = [
    ("INSERT_SERVICES", "USAGE"),
    ("INSERT_USAGE", "USAGE"),
    ("INSERT_INVOICES", "INVOICE"),
    ("INSERT_PAYMENTS", "PAYMENT"),
    ("INSERT_ADJUSTMENTS", "ADJUSTMENT"),
];

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|i| i["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn the_platform_operations_are_listed_after_the_catalogue_and_each_runs() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let (all, total, _, _) = c.paged("/collectors").await;
    let catalogue = ["usage-charges", "invoices", "payments", "adjustments"];
    let expected: Vec<&str> = catalogue
        .iter()
        .copied()
        .chain(OPERATIONS.iter().map(|(n, _)| *n))
        .collect();
    assert_eq!(names(&all), expected);
    assert_eq!(total, 9);
    for (item, (name, category)) in all[4..].iter().zip(OPERATIONS) {
        assert_eq!(item["name"], name);
        assert_eq!(item["group"], "PLATFORM", "{item}");
        assert_eq!(item["category"], category, "{item}");
        assert!(!item["friendly_name"].as_str().unwrap().is_empty());
        assert!(item["description"].is_string(), "{item}");
    }

    // Filters and paging span both kinds.
    let (platform, total, _, _) = c.paged("/collectors?group=PLATFORM").await;
    assert_eq!(names(&platform), expected[4..]);
    assert_eq!(total, 5);
    let (usage, _, _, _) = c.paged("/collectors?category=USAGE").await;
    assert_eq!(
        names(&usage),
        ["usage-charges", "INSERT_SERVICES", "INSERT_USAGE"]
    );
    let (page, total, elements, pages) = c.paged("/collectors?page_size=3&page_number=2").await;
    assert_eq!((total, elements, pages), (9, 3, 3));
    assert_eq!(
        names(&page),
        ["adjustments", "INSERT_SERVICES", "INSERT_USAGE"]
    );
    let (last, _, elements, _) = c.paged("/collectors?page_size=4&page_number=3").await;
    assert_eq!((names(&last), elements), (vec!["INSERT_ADJUSTMENTS"], 1));
    let (beyond, total, elements, _) = c.paged("/collectors?page_size=5&page_number=3").await;
    assert_eq!((beyond.len(), total, elements), (0, 9, 0));
    let (none, total, _, _) = c.paged("/collectors?group=PLATFORM&category=ORDER").await;
    assert_eq!((none.len(), total), (0, 0));

    // Every listed name is one a run accepts, and the run shows it.
    for name in expected {
        let run = c.collect(autumn_run(json!([name]))).await;
        assert_eq!(run["collector_operations"], json!([name]), "{run}");
        assert_eq!(run["status"], "COMPLETE", "{name}: {run}");
    }
}

#[tokio::test]
async fn a_tenant_without_a_catalogue_lists_and_runs_the_platform_operations() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "bare", "empty").await;
    let (all, total, _, _) = c.paged("/collectors").await;
    assert_eq!(
        names(&all),
        OPERATIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
    assert_eq!(total, 5);
    let run = c.collect(autumn_run(json!(["INSERT_INVOICES"]))).await;
    assert_eq!(run["status"], "COMPLETE", "{run}");
    // A run naming nothing runs the catalogue: there is none.
    let message = c
        .error(
            Method::POST,
            "/collector-runs",
            Some(autumn_run(json!([]))),
            412,
        )
        .await;
    assert!(message.contains("catalogue is empty"), "{message}");
}
