//! The WADL describes paging wherever the routes page: every GET that answers a page (its
//! wrapper echoes `pageNumber` and `pageSize`) lists the query params `pageNumber` (default
//! one) and `pageSize` (default 50), and no other method lists them. Which routes page is
//! found by asking each described GET for page 2 of size 1, not from the route table, so a
//! paged route the WADL forgets (as `billingAccounts/{eid}/notes` once was) fails here.

use crate::wadl::described;
use e2e::billing::send;
use e2e::legacy::{attr, opt_attr, Legacy};
use serde_json::json;

/// `path` with `{eid}` replaced by the eid of the first object of its collection.
async fn with_eid(a: &Legacy, path: &str) -> String {
    let Some((collection, rest)) = path.split_once("/{eid}") else {
        return path.to_string();
    };
    let list = a.get(&format!("{collection}?pageSize=1")).await;
    let first = list
        .el()
        .children
        .first()
        .unwrap_or_else(|| panic!("{collection} is empty: {}", list.body));
    format!("{collection}/{}{rest}", attr(first, "eid"))
}

#[tokio::test]
async fn every_paged_route_describes_page_number_and_page_size() {
    let a = Legacy::start("demo").await;
    // A note on account 1, so that its notes page holds something.
    let r = a
        .post(
            "billingAccounts/1/addNote",
            r#"<addNote note="WADL paging"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A usage event, so that every collection holds an object to read by eid.
    let usage = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR",
         "usage_amount": 1, "start_time": "2026-11-10"}]});
    let r = send(
        a.s.client
            .post(a.s.url("/billing/2/usage-events/bulk"))
            .json(&usage),
        &a.t,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r =
        a.s.client
            .get(a.s.url("/t/s/r/1.28?_wadl"))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 200);
    let described = described(&r.text().await.unwrap()).methods;
    let mut paged = Vec::new();
    for ((method, path), params) in &described {
        let lists_paging = params.contains_key("pageNumber") || params.contains_key("pageSize");
        if method != "GET" {
            assert!(!lists_paging, "{method} {path} does not page: {params:?}");
            continue;
        }
        let url = format!("{}?pageNumber=2&pageSize=1", with_eid(&a, path).await);
        let answer = a.get(&url).await;
        assert_eq!(answer.status, 200, "{url}: {}", answer.body);
        let root = answer.el();
        let pages =
            opt_attr(root, "pageNumber") == Some("2") && opt_attr(root, "pageSize") == Some("1");
        assert_eq!(
            lists_paging, pages,
            "GET {path}: the WADL lists {params:?}, the answer is {}",
            answer.body
        );
        if pages {
            assert_eq!(params["pageNumber"].as_deref(), Some("1"), "{path}");
            assert_eq!(params["pageSize"].as_deref(), Some("50"), "{path}");
            paged.push(path.as_str());
        }
    }
    // The collections of the route table and the account's notes, at least.
    for path in [
        "billingAccounts",
        "billingAccounts/{eid}/notes",
        "notes",
        "billingAccountCategories",
        "invoices",
        "payments",
        "agreements",
        "agreementServices",
        "products",
        "usageEvents",
        "users",
    ] {
        assert!(paged.contains(&path), "{path} pages: {paged:?}");
    }
    // The notes of an account take the notes' own keys except the one its path sets.
    let notes = &described[&("GET".to_string(), "billingAccounts/{eid}/notes".to_string())];
    assert!(notes.contains_key("accountNum"), "{notes:?}");
    assert!(!notes.contains_key("billingAccountEid"), "{notes:?}");
    let first = a
        .get("billingAccounts/1/notes?pageSize=1&accountNum=ACC-1001")
        .await;
    assert_eq!(
        opt_attr(first.el(), "elementCount"),
        Some("1"),
        "{}",
        first.body
    );
    let other = a.get("billingAccounts/1/notes?accountNum=ACC-1002").await;
    assert_eq!(
        opt_attr(other.el(), "totalElements"),
        Some("0"),
        "{}",
        other.body
    );
}
