//! Surface B query and maintenance endpoints over HTTP: named filters, sort, paging headers,
//! SIMPLE/FULL and Prefer, ETag/304, writes, and the 400/404 shapes.

use e2e::billing::{all_ids, get, send, setup, Answer, B};
use e2e::error_body;
use serde_json::{json, Value};

#[tokio::test]
async fn paging_headers_at_the_edges() {
    let (s, t) = setup().await;
    let first = get(&s, &t, "/agreement-services", &[]).await;
    assert_eq!(first.status, 200);
    let total = first.total();
    assert_eq!(total, 120, "7 listed + 113 generated agreement services");
    assert_eq!(first.items().len(), 50, "default page_size is 50");
    assert_eq!(first.header("x-element-count"), Some("50"));
    assert_eq!(first.header("x-total-pages"), Some("3"));
    assert!(first.header("etag").is_some());
    let ids = all_ids(&s, &t, "/agreement-services", &[], 50).await;
    assert_eq!(ids.len() as i64, total);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "default order is id ascending, no repeats"
    );

    let last = get(&s, &t, "/agreement-services", &[("page_number", "3")]).await;
    assert_eq!(last.header("x-element-count"), Some("20"));
    let past = get(&s, &t, "/agreement-services", &[("page_number", "4")]).await;
    assert_eq!((past.status, past.items().len()), (200, 0));
    let zero = get(
        &s,
        &t,
        "/agreement-services",
        &[("page_number", "0"), ("page_size", "7")],
    )
    .await;
    let one = get(
        &s,
        &t,
        "/agreement-services",
        &[("page_number", "1"), ("page_size", "7")],
    )
    .await;
    assert_eq!(zero.ids(), one.ids(), "page 0 is the first page");
    assert_eq!(one.header("x-total-pages"), Some("18"));
    let empty = get(&s, &t, "/agreement-services", &[("page_size", "0")]).await;
    assert_eq!(empty.items().len(), 0);
    assert_eq!(empty.total(), total, "page_size 0 still counts");
    assert_eq!(empty.header("x-total-pages"), Some("0"));
    let omitted = get(
        &s,
        &t,
        "/agreement-services",
        &[("omit_total_count", "TRUE"), ("page_size", "5")],
    )
    .await;
    assert_eq!(omitted.header("x-element-count"), Some("5"));
    assert!(omitted.header("x-total-count").is_none() && omitted.header("x-total-pages").is_none());

    for (name, value) in [
        ("page_size", "51"),
        ("page_size", "-1"),
        ("page_number", "-1"),
        ("page_number", "x"),
        ("return", "ALL"),
        ("omit_total_count", "maybe"),
        ("sort", "nope"),
    ] {
        let r = s
            .client
            .get(s.url(&format!("{B}/agreement-services")))
            .query(&[(name, value)])
            .header("X-Api-Key", &t.api_key)
            .send()
            .await
            .unwrap();
        let (status, code, message) = error_body(r).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "BAD_REQUEST"),
            "{name}={value}"
        );
        assert!(message.contains(name), "{name}: {message}");
    }
}

fn numbers(a: &Answer, field: &str) -> Vec<f64> {
    a.items().iter().filter_map(|v| v[field].as_f64()).collect()
}

#[tokio::test]
async fn sort_both_ways_and_stable() {
    let (s, t) = setup().await;
    let up = get(
        &s,
        &t,
        "/agreement-services",
        &[
            ("sort", "minimum_amount"),
            ("filter", "minimum_amount IS NOT NULL"),
        ],
    )
    .await;
    let down = get(
        &s,
        &t,
        "/agreement-services",
        &[
            ("sort", "-minimum_amount"),
            ("filter", "minimum_amount IS NOT NULL"),
        ],
    )
    .await;
    let (u, d) = (
        numbers(&up, "minimum_amount"),
        numbers(&down, "minimum_amount"),
    );
    assert!(u.len() == 50 && d.len() == 50);
    assert!(
        u.windows(2).all(|w| w[0] <= w[1]),
        "ascending numerically: {u:?}"
    );
    assert!(
        d.windows(2).all(|w| w[0] >= w[1]),
        "descending numerically: {d:?}"
    );
    // Two keys: equal first keys fall back to the second, then to id.
    let both = all_ids(
        &s,
        &t,
        "/agreement-services",
        &[("sort", "-status,start_date")],
        17,
    )
    .await;
    assert_eq!(both.len(), 120);
    let mut sorted = both.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        120,
        "stable paging: every record exactly once"
    );
    let dates = get(&s, &t, "/agreement-services", &[("sort", "-start_date")]).await;
    let starts: Vec<&str> = dates
        .items()
        .iter()
        .map(|v| v["start_date"].as_str().unwrap())
        .collect();
    let parsed: Vec<chrono::DateTime<chrono::FixedOffset>> = starts
        .iter()
        .map(|s| chrono::DateTime::parse_from_rfc3339(s).unwrap())
        .collect();
    assert!(parsed.windows(2).all(|w| w[0] >= w[1]));
    let (status, _, message) = error_body(
        s.client
            .get(s.url(&format!("{B}/agreement-services?sort=start_date,renewed")))
            .header("X-Api-Key", &t.api_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        message.contains("cannot be sorted") && message.contains("position 12"),
        "{message}"
    );
}

/// For each named filter: the query parameter and the same predicate in `filter` select the
/// same non-empty set, smaller than the whole list.
#[tokio::test]
async fn named_filters_as_parameters_and_fields() {
    let (s, t) = setup().await;
    let cases: &[(&str, &str, &str)] = &[
        ("/actions", "product_id", "1"),
        ("/actions", "action_type", "invoice"),
        ("/actions", "agreement_id", "1"),
        ("/actions", "bill_cycle_id", "1"),
        ("/adjustment-applications", "adjustment_id", "3"),
        ("/adjustment-applications", "billing_account_id", "4"),
        ("/adjustment-applications", "account_num", "ACC-1004"),
        (
            "/adjustment-applications",
            "occurred_on",
            "2026-11-03T12:00:00Z",
        ),
        ("/adjustment-applications", "unapplied_amount", "4.25"),
        (
            "/adjustment-applications",
            "adjustment_application_type",
            "negative-invoice",
        ),
        ("/adjustment-categories", "name", "Goodwill Credit"),
        ("/adjustment-categories", "status", "SUSPENDED"),
        ("/agreements", "valid_from", "2024-01-01"),
        ("/agreements", "valid_to", "2027-12-31"),
        ("/agreements", "name", "Energy 24 months"),
        ("/agreements", "product_id", "4"),
        ("/agreements", "status", "INACTIVE"),
        ("/agreements", "termination_fee_currency_code", "EUR"),
        ("/agreements", "max_termination_fee_currency_code", "USD"),
        ("/agreement-services", "service_id", "105"),
        (
            "/agreement-services",
            "service_resource_identifier",
            "gen-0105",
        ),
        (
            "/agreement-services",
            "child_service_resource_identifier",
            "srv-compute-0001-vm-a",
        ),
        ("/agreement-services", "product_id", "3"),
        ("/agreement-services", "billing_account_id", "2"),
        ("/agreement-services", "account_num", "ACC-1003"),
        ("/agreement-services", "external_account_num", "EXT-1005"),
        ("/agreement-services", "status", "TRIAL"),
        ("/bill-batches", "bill_batch_type", "adhoc"),
        ("/bill-batches", "name", "November on-demand"),
        ("/bill-batches", "status", "SUSPENDED"),
        ("/bill-batches", "currency_code", "EUR"),
        ("/bill-batches", "billing_account_id", "3"),
        ("/bill-batches", "account_num", "ACC-1001"),
        ("/bill-batches", "external_account_num", "EXT-1003"),
        (
            "/bill-batches/1/billing-accounts",
            "account_num",
            "ACC-1002",
        ),
        (
            "/bill-batches/1/billing-accounts",
            "external_account_num",
            "EXT-1005",
        ),
    ];
    for (path, name, value) in cases {
        let by_param = all_ids(&s, &t, path, &[(name, value)], 50).await;
        let filter = format!("{name} EQ '{value}'");
        let by_filter = all_ids(&s, &t, path, &[("filter", &filter)], 50).await;
        let everything = get(
            &s,
            &t,
            path,
            &[("filter", &format!("{name} EQ '{value}' OR id IS NOT NULL"))],
        )
        .await;
        assert!(
            !by_param.is_empty(),
            "{path}?{name}={value} matches something"
        );
        assert_eq!(
            by_param, by_filter,
            "{path}: {name} as parameter and in filter"
        );
        if *name != "status" || *path != "/bill-batches" {
            assert!(
                (by_param.len() as i64) < everything.total(),
                "{path}?{name} narrows"
            );
        }
    }
    // Values outside an enumerated or currency set are 400s naming the parameter.
    for (path, name, value) in [
        ("/actions", "action_type", "party"),
        ("/agreement-services", "status", "SLEEPING"),
        ("/bill-batches", "currency_code", "XXX"),
        ("/agreements", "termination_fee_currency_code", "usd1"),
        ("/adjustment-categories", "status", "ON"),
        ("/agreement-services", "product_id", "abc"),
    ] {
        let a = get(&s, &t, path, &[(name, value)]).await;
        assert_eq!(a.status, 400, "{path}?{name}={value}");
        assert!(
            a.body["message"].as_str().unwrap().starts_with(name),
            "{}",
            a.body
        );
    }
    let long = "x".repeat(256);
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[("service_resource_identifier", &long)],
    )
    .await;
    assert_eq!(a.status, 400);
}

#[tokio::test]
async fn filter_reaches_fields_values_and_exact_decimals() {
    let (s, t) = setup().await;
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[(
            "filter",
            "minimum_amount GT '9.6' AND minimum_amount LT '100'",
        )],
    )
    .await;
    assert!(!a.items().is_empty());
    for v in a.items() {
        let m = v["minimum_amount"].as_f64().unwrap();
        assert!(m > 9.6 && m < 100.0, "{v}");
    }
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[(
            "filter",
            "agreement.id EQ '2' AND NOT status IN ('ACTIVE','TRIAL')",
        )],
    )
    .await;
    assert!(!a.items().is_empty());
    assert!(a.items().iter().all(|v| v["agreement"]["id"] == "2"));
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[("filter", "true_up_charge_types EQ 'RECURRING'")],
    )
    .await;
    assert!(a.items().iter().all(|v| v["true_up_charge_types"]
        .as_array()
        .unwrap()
        .contains(&json!("RECURRING"))));
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[(
            "filter",
            "start_date GTE '2025-03-01' AND start_date LT '2025-04-01'",
        )],
    )
    .await;
    assert!(!a.items().is_empty());
    for v in a.items() {
        let start = v["start_date"].as_str().unwrap().to_string();
        assert!(start.starts_with("2025-03-"), "local March date: {start}");
        // America/Chicago: CST until 2 a.m. on 9 March 2025, CDT after.
        let offset = if start.as_str() < "2025-03-10" {
            "-06:00"
        } else {
            "-05:00"
        };
        assert!(start.ends_with(offset), "tenant offset: {start}");
    }
    // Every boolean and reference field of the demo agreement services takes both kinds of
    // value, so filtering on it narrows.
    for field in [
        "renewed",
        "next_service_pay_on_purchase",
        "preserve_service_price",
        "next_preserve_service_price",
        "omit_minimum_amount",
    ] {
        let yes = get(
            &s,
            &t,
            "/agreement-services",
            &[("filter", &format!("{field} EQ 'true'"))],
        )
        .await;
        let no = get(
            &s,
            &t,
            "/agreement-services",
            &[("filter", &format!("{field} EQ 'false'"))],
        )
        .await;
        assert!(yes.total() > 0 && no.total() > 0, "{field}");
        assert_eq!(yes.total() + no.total(), 120, "{field}");
        assert!(
            yes.items().iter().all(|v| v[field] == json!(true)),
            "{field}"
        );
    }
    for field in [
        "next_agreement.id",
        "next_service_product.id",
        "end_date",
        "minimum_amount",
    ] {
        let set = get(
            &s,
            &t,
            "/agreement-services",
            &[("filter", &format!("{field} IS NOT NULL"))],
        )
        .await;
        let unset = get(
            &s,
            &t,
            "/agreement-services",
            &[("filter", &format!("{field} IS NULL"))],
        )
        .await;
        assert!(set.total() > 0 && unset.total() > 0, "{field}");
    }
    let a = get(&s, &t, "/agreements", &[("filter", "name LIKE '%MONTHS'")]).await;
    assert_eq!(a.items().len(), 2, "LIKE ignores case: {}", a.body);
    let a = get(
        &s,
        &t,
        "/agreements",
        &[("filter", "minimum_amount_currency_type NEQ 'USD'")],
    )
    .await;
    assert!(a.items().is_empty(), "NEQ does not match null fields");
    let a = get(
        &s,
        &t,
        "/adjustment-applications",
        &[("filter", "account_adjustment.amount GTE '40'")],
    )
    .await;
    assert!(!a.items().is_empty());
    assert!(a
        .items()
        .iter()
        .all(|v| v["account_adjustment"]["amount"].as_f64().unwrap() >= 40.0));
    let a = get(
        &s,
        &t,
        "/adjustment-applications",
        &[(
            "filter",
            "account_adjustment.billing_account.external_account_num IS NULL",
        )],
    )
    .await;
    assert!(!a.items().is_empty());
    assert!(a
        .items()
        .iter()
        .all(|v| v["account_adjustment"]["billing_account"]["external_account_num"].is_null()));

    for (filter, needle) in [
        ("name EQ 'x", "position 9"),
        ("(name EQ 'x'", "position 1"),
        ("bogus EQ 'x'", "unknown field 'bogus'"),
        ("minimum_amount LIKE '1%'", "LIKE does not apply"),
        ("renewed EQ 'maybe'", "true or false"),
        ("start_date GT 'soon'", "date"),
    ] {
        let r = s
            .client
            .get(s.url(&format!("{B}/agreement-services")))
            .query(&[("filter", filter)])
            .header("X-Api-Key", &t.api_key)
            .send()
            .await
            .unwrap();
        let (status, code, message) = error_body(r).await;
        assert_eq!((status, code.as_str()), (400, "BAD_REQUEST"));
        assert!(message.contains(needle), "{filter}: {message}");
    }
}

#[tokio::test]
async fn simple_full_prefer_and_etag() {
    let (s, t) = setup().await;
    let full = get(&s, &t, "/agreement-services/1", &[]).await;
    assert_eq!(full.status, 200);
    let f = &full.body;
    assert_eq!(f["id"], "1");
    assert_eq!(
        f["agreement"],
        json!({"name": "Standard 12 months", "id": "1"})
    );
    assert_eq!(f["minimum_amount"], json!(250));
    assert_eq!(f["true_up_charge_types"], json!(["USAGE"]));
    assert_eq!(f["start_date"], "2025-01-01T00:00:00-06:00");
    let simple = get(&s, &t, "/agreement-services/1", &[("return", "SIMPLE")]).await;
    assert_eq!(simple.body["agreement"], json!({"id": "1"}));
    assert!(simple.body.get("true_up_charge_types").is_none());
    assert_eq!(simple.body["minimum_amount"], json!(250));
    assert!(simple.header("preference-applied").is_none());

    let minimal = send(
        s.client
            .get(s.url(&format!("{B}/agreement-services/1")))
            .header("Prefer", "return=minimal"),
        &t,
    )
    .await;
    assert_eq!(minimal.body, simple.body);
    assert_eq!(minimal.header("preference-applied"), Some("return=minimal"));
    let repr = send(
        s.client
            .get(s.url(&format!("{B}/agreements?page_size=2")))
            .header("Prefer", "return=representation"),
        &t,
    )
    .await;
    assert_eq!(
        repr.header("preference-applied"),
        Some("return=representation")
    );
    assert!(repr.items()[0]["adjustment_category"]["name"].is_string());
    let list_simple = send(
        s.client
            .get(s.url(&format!("{B}/agreements?page_size=2")))
            .header("Prefer", "return=minimal"),
        &t,
    )
    .await;
    assert_eq!(
        list_simple.items()[0]["adjustment_category"],
        json!({"id": "6"})
    );

    let etag = full.header("etag").unwrap().to_string();
    let again = send(
        s.client
            .get(s.url(&format!("{B}/agreement-services/1")))
            .header("If-None-Match", &etag),
        &t,
    )
    .await;
    assert_eq!(again.status, 304);
    let list = get(&s, &t, "/agreement-services", &[("page_size", "3")]).await;
    let tag = list.header("etag").unwrap().to_string();
    let same = send(
        s.client
            .get(s.url(&format!("{B}/agreement-services?page_size=3")))
            .header("If-None-Match", &tag),
        &t,
    )
    .await;
    assert_eq!(same.status, 304);
    // A change to a listed record changes the tag.
    let put = send(
        s.client
            .put(s.url(&format!("{B}/agreement-services/1")))
            .json(&json!({"renewed_by_mistake": true})),
        &t,
    )
    .await;
    assert_eq!(put.status, 400, "unknown fields are refused");
    let put = send(
        s.client
            .put(s.url(&format!("{B}/agreement-services/1")))
            .json(&json!({"omit_minimum_amount": true})),
        &t,
    )
    .await;
    assert_eq!(put.status, 200);
    let changed = send(
        s.client
            .get(s.url(&format!("{B}/agreement-services?page_size=3")))
            .header("If-None-Match", &tag),
        &t,
    )
    .await;
    assert_eq!(changed.status, 200);
}

#[tokio::test]
async fn lists_answer_bearer_tokens_and_refuse_strangers() {
    let (s, t) = setup().await;
    let token = s.token(&t, 300).await;
    let r = s
        .client
        .get(s.url(&format!("{B}/agreement-services?page_size=1")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-total-count"], "120");
    let other = s.create_tenant("other", "empty").await;
    let empty = get(&s, &other, "/agreement-services", &[]).await;
    assert_eq!(
        (empty.total(), empty.items().len()),
        (0, 0),
        "tenants do not see each other"
    );
    let r = s
        .client
        .get(s.url(&format!("{B}/agreements")))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 401);
}

#[tokio::test]
async fn lists_that_match_nothing_are_empty_pages() {
    let (s, t) = setup().await;
    for (path, query) in [
        ("/actions", vec![("filter", "name EQ 'nothing'")]),
        (
            "/bill-cycles/1/actions",
            vec![("filter", "name EQ 'nothing'")],
        ),
        ("/adjustment-applications", vec![("account_num", "NOBODY")]),
        (
            "/adjustment-applications",
            vec![("filter", "account_num EQ 'NOBODY'")],
        ),
        ("/adjustment-categories", vec![("name", "nothing")]),
        ("/agreements", vec![("name", "nothing")]),
        ("/agreement-services", vec![("account_num", "NOBODY")]),
        (
            "/agreement-services/1/true-up-charge-type-relations",
            vec![("filter", "true_up_charge_type EQ 'NONE'")],
        ),
        (
            "/bill-batches",
            vec![("name", "nothing"), ("expand", "bill_batch_runs")],
        ),
        (
            "/bill-batches/1/billing-accounts",
            vec![("account_num", "NOBODY")],
        ),
        ("/usage-events", vec![("reference_id", "nobody")]),
    ] {
        let a = get(&s, &t, path, &query).await;
        assert_eq!(a.status, 200, "{path} {query:?}: {}", a.body);
        assert_eq!(a.body, serde_json::json!([]), "{path} {query:?}");
        assert_eq!(a.headers["x-total-count"], "0", "{path} {query:?}");
        assert_eq!(a.headers["x-element-count"], "0", "{path} {query:?}");
    }
}

#[tokio::test]
async fn unknown_ids_are_404() {
    let (s, t) = setup().await;
    for path in [
        "/actions/999",
        "/actions/abc",
        "/bill-cycles/1/actions/5",
        "/bill-cycles/99/actions",
        "/adjustment-applications/999",
        "/adjustment-categories/1",
        "/adjustment-categories/999",
        "/agreements/999",
        "/agreement-services/99999",
        "/agreement-services/99999/true-up-charge-type-relations",
        "/agreement-services/2/true-up-charge-type-relations/1",
        "/bill-batches/999",
        "/bill-batches/999/billing-accounts",
    ] {
        let r = s.get_with_key(&format!("{B}{path}"), &t.api_key).await;
        let (status, code, message) = error_body(r).await;
        assert_eq!((status, code.as_str()), (404, "NOT_FOUND"), "{path}");
        assert!(message.contains("does not exist"), "{path}: {message}");
    }
    let r = s
        .client
        .delete(s.url(&format!("{B}/agreements/1")))
        .header("X-Api-Key", &t.api_key)
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_body(r).await;
    assert_eq!((status, code.as_str()), (405, "METHOD_NOT_ALLOWED"));
}

#[tokio::test]
async fn every_read_endpoint_renders_its_representation() {
    let (s, t) = setup().await;
    let action = get(&s, &t, "/actions/1", &[]).await.body;
    assert_eq!(action["action_type"], "service");
    assert_eq!(action["operations"][0]["id"].as_str().map(|_| ()), Some(()));
    assert!(action["supports_approval"].as_bool().unwrap());
    let cycle = get(&s, &t, "/bill-cycles/1/actions", &[]).await;
    assert!(
        cycle.items().iter().all(|a| a["id"] == "3"),
        "{}",
        cycle.body
    );
    assert_eq!(
        get(&s, &t, "/bill-cycles/1/actions/3", &[]).await.status,
        200
    );

    let app = get(&s, &t, "/adjustment-applications/3", &[]).await.body;
    let adj = &app["account_adjustment"];
    assert_eq!(adj["id"], "3");
    assert_eq!(adj["amount"], json!(10));
    assert_eq!(adj["unapplied_amount"], json!(4.25));
    assert_eq!(adj["billing_account"]["account_num"], "ACC-1004");
    assert_eq!(
        adj["items"][0]["category"]["charge_category_type"],
        "Adjustment"
    );
    assert_eq!(adj["occurred_on"], "2026-11-03T06:00:00-06:00");

    let cats = get(&s, &t, "/adjustment-categories", &[("sort", "-priority")]).await;
    assert!(cats
        .items()
        .iter()
        .all(|c| c["charge_category_type"] == "Adjustment"));
    let priorities: Vec<i64> = cats
        .items()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert!(priorities.windows(2).all(|w| w[0] >= w[1]) && priorities.len() == 4);

    let agreement = get(&s, &t, "/agreements/1", &[]).await.body;
    assert_eq!(
        agreement["true_up_adjustment_reason"]["name"],
        "Minimum commitment true-up"
    );
    assert_eq!(agreement["termination_flat_charge"], json!(100));
    assert_eq!(agreement["agreement_period"], json!(12));

    let batches = get(&s, &t, "/bill-batches", &[]).await;
    assert!(
        batches.items().iter().all(|b| b["status"] == "ACTIVE"),
        "status defaults to ACTIVE"
    );
    assert_eq!(batches.items().len(), 2);
    let all = get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "status IN ('ACTIVE','SUSPENDED','CANCELED')")],
    )
    .await;
    assert_eq!(
        all.items().len(),
        4,
        "a status named in filter replaces the default"
    );
    let plain = get(&s, &t, "/bill-batches/1", &[]).await.body;
    assert_eq!(plain["bill_batch_runs"], json!([{"id": "1"}, {"id": "2"}]));
    let runs = get(&s, &t, "/bill-batches/1", &[("expand", "bill_batch_runs")])
        .await
        .body;
    assert_eq!(runs["bill_batch_runs"][0]["status"], "CLOSED");
    assert_eq!(
        runs["bill_batch_runs"][0]["invoices"][0],
        json!({"id": "1"})
    );
    let deep = get(
        &s,
        &t,
        "/bill-batches/1",
        &[("expand", "bill_batch_runs.invoices")],
    )
    .await
    .body;
    let invoice = &deep["bill_batch_runs"][0]["invoices"][0];
    assert_eq!(invoice["invoice_num"], "INV-0001");
    assert_eq!(invoice["amount"], json!(310.5));
    assert_eq!(
        get(&s, &t, "/bill-batches/1", &[("expand", "everything")])
            .await
            .status,
        400
    );
    let accounts = get(
        &s,
        &t,
        "/bill-batches/1/billing-accounts",
        &[("sort", "-account_num")],
    )
    .await;
    let nums: Vec<&str> = accounts
        .items()
        .iter()
        .map(|a| a["account_num"].as_str().unwrap())
        .collect();
    assert_eq!(nums, ["ACC-1005", "ACC-1002", "ACC-1001"]);
    assert_eq!(accounts.items()[0]["cpq_discounts"], json!([]));
}

#[tokio::test]
async fn agreement_service_update() {
    let (s, t) = setup().await;
    let path = format!("{B}/agreement-services/2");
    let body = json!({
        "next_service_pay_on_purchase": true,
        "accumulated_charges_amount": 0,
        "end_date": "2026-12-31",
        "end_action": "END",
        "next_agreement": {"id": "3"},
        "next_end_action": "RENEW",
        "next_service_product": {"id": "1"},
        "next_service_product_price": {"id": "1"},
        "preserve_service_price": true,
        "next_preserve_service_price": true,
        "minimum_amount": 99.99,
        "minimum_amount_currency_code": "EUR",
        "omit_minimum_amount": true,
        "true_up_charge_types": ["USAGE", "RECURRING", "USAGE"]
    });
    // serde_json's json! would round the amount through f64; send its exact text.
    let body = body.to_string().replace(
        "\"accumulated_charges_amount\":0",
        "\"accumulated_charges_amount\":1234.5600000000000000001",
    );
    let r = s
        .client
        .put(s.url(&path))
        .header("X-Api-Key", &t.api_key)
        .header("Prefer", "return=representation")
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["preference-applied"], "return=representation");
    let text = r.text().await.unwrap();
    assert!(
        text.contains("\"accumulated_charges_amount\":1234.5600000000000000001"),
        "exact: {text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["end_date"], "2026-12-31T00:00:00-06:00");
    assert_eq!(
        v["next_agreement"],
        json!({"name": "Marketplace monthly", "id": "3"})
    );
    assert_eq!(v["next_service_product"]["sku"], "CMP-100");
    assert_eq!(
        v["next_service_product_price"]["product_price_type"],
        "RECURRING"
    );
    assert_eq!(v["true_up_charge_types"], json!(["USAGE", "RECURRING"]));
    assert_eq!(
        get(&s, &t, "/agreement-services/2", &[]).await.body,
        v,
        "stored as answered"
    );

    // Partial: null clears, absent stays; Prefer minimal answers the SIMPLE form.
    let r = send(
        s.client
            .put(s.url(&path))
            .header("Prefer", "return=minimal")
            .json(&json!({"next_agreement": null, "true_up_charge_types": []})),
        &t,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some("return=minimal"));
    assert!(r.body["next_agreement"].is_null());
    assert_eq!(r.body["next_service_product"], json!({"id": "1"}));
    assert_eq!(r.body["end_action"], "END");

    // Bad input is a 400 and applies nothing.
    for bad in [
        json!({"minimum_amount_currency_code": "XYZ", "end_action": "RENEW"}),
        json!({"minimum_amount": -1}),
        json!({"minimum_amount": "12"}),
        json!({"end_date": "2024-01-01"}),
        json!({"end_date": "someday"}),
        json!({"agreement": {"id": "999"}}),
        json!({"next_service_product_price": {"id": "3"}}),
        json!({"id": "7"}),
        json!({"status": "ACTIVE"}),
    ] {
        let r = s
            .client
            .put(s.url(&path))
            .header("X-Api-Key", &t.api_key)
            .json(&bad)
            .send()
            .await
            .unwrap();
        let (status, _, message) = error_body(r).await;
        assert_eq!(status, 400, "{bad}: {message}");
    }
    assert_eq!(
        get(&s, &t, "/agreement-services/2", &[]).await.body["end_action"],
        "END"
    );
    let r = s
        .client
        .put(s.url(&format!("{B}/agreement-services/99999")))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({"renewed": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "unknown field checked first");
    let r = s
        .client
        .put(s.url(&format!("{B}/agreement-services/99999")))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({"omit_minimum_amount": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 404);
}

#[tokio::test]
async fn true_up_relations_lifecycle() {
    let (s, t) = setup().await;
    let base = format!("{B}/agreement-services/3/true-up-charge-type-relations");
    let list = send(s.client.get(s.url(&base)), &t).await;
    assert_eq!(list.total(), 2);
    let created = send(
        s.client
            .post(s.url(&base))
            .header("Prefer", "return=representation")
            .json(&json!({"true_up_charge_type": "ONE_TIME"})),
        &t,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.header("preference-applied"),
        Some("return=representation")
    );
    assert_eq!(created.body["agreement_service"], json!({"id": "3"}));
    let id = created.body["id"].as_str().unwrap().to_string();
    let one = send(s.client.get(s.url(&format!("{base}/{id}"))), &t).await;
    assert_eq!(one.body, created.body);
    let dup = s
        .client
        .post(s.url(&base))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({"true_up_charge_type": "ONE_TIME"}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(dup).await.0, 400);
    let empty = s
        .client
        .post(s.url(&base))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({"true_up_charge_type": " "}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(empty).await.0, 400);
    let filtered = send(
        s.client
            .get(s.url(&base))
            .query(&[("filter", "true_up_charge_type LIKE 'one%'")]),
        &t,
    )
    .await;
    assert_eq!(filtered.ids(), vec![id.parse::<i64>().unwrap()]);
    let service = get(&s, &t, "/agreement-services/3", &[]).await;
    assert!(service.body["true_up_charge_types"]
        .as_array()
        .unwrap()
        .contains(&json!("ONE_TIME")));
    let wrong_parent = s
        .client
        .delete(s.url(&format!(
            "{B}/agreement-services/1/true-up-charge-type-relations/{id}"
        )))
        .header("X-Api-Key", &t.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(wrong_parent).await.0, 404);
    let deleted = send(s.client.delete(s.url(&format!("{base}/{id}"))), &t).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        send(s.client.get(s.url(&format!("{base}/{id}"))), &t)
            .await
            .status,
        404
    );
    let missing = s
        .client
        .post(s.url(&format!(
            "{B}/agreement-services/99999/true-up-charge-type-relations"
        )))
        .header("X-Api-Key", &t.api_key)
        .json(&json!({"true_up_charge_type": "X"}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(missing).await.0, 404);
}

#[tokio::test]
async fn bill_batch_creation() {
    let (s, t) = setup().await;
    let body = json!({"bill_batch_type": "adhoc", "name": "December run", "description": "made by a test",
        "invoice_date": "2026-12-01", "invoice_due_date": "2026-12-31T00:00:00Z", "auto_approve": true, "use_payment_term": true});
    let created = send(
        s.client
            .post(s.url(&format!("{B}/bill-batches")))
            .header("Prefer", "return=representation")
            .json(&body),
        &t,
    )
    .await;
    assert_eq!(
        created.status, 200,
        "the interface's table says 200: {}",
        created.body
    );
    assert_eq!(
        created.header("preference-applied"),
        Some("return=representation")
    );
    assert_eq!(created.body["status"], "ACTIVE");
    assert_eq!(created.body["currency_code"], "USD");
    assert_eq!(created.body["auto_approve"], json!(true));
    let id = created.body["id"].as_str().unwrap();
    assert_eq!(
        get(&s, &t, &format!("/bill-batches/{id}"), &[]).await.body,
        created.body
    );
    let listed = get(&s, &t, "/bill-batches", &[("name", "December run")]).await;
    assert_eq!(listed.ids(), vec![id.parse::<i64>().unwrap()]);
    for bad in [
        json!({"bill_batch_type": "weekly", "name": "x"}),
        json!({"bill_batch_type": "adhoc", "name": " "}),
        json!({"bill_batch_type": "adhoc"}),
        json!({"bill_batch_type": "adhoc", "name": "x", "invoice_date": "2026-12-02", "invoice_due_date": "2026-12-01"}),
        json!({"bill_batch_type": "adhoc", "name": "x", "status": "CANCELED"}),
    ] {
        let r = s
            .client
            .post(s.url(&format!("{B}/bill-batches")))
            .header("X-Api-Key", &t.api_key)
            .json(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(error_body(r).await.0, 400, "{bad}");
    }
}
