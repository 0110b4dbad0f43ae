//! Surface B lists over HTTP: named filters, sort, paging headers, SIMPLE/FULL and Prefer,
//! ETag/304, and the 400/404 shapes. Single records and writes are in `records.rs`.

use e2e::billing::{
    all_ids, assert_refused, call, filtered, get, get_with, setup, Answer, Query, B,
};
use e2e::{error_body, Refusal};
use reqwest::Method;
use serde_json::{json, Value};

/// A paging case: query, items and X-Element-Count, X-Total-Count, X-Total-Pages.
type PageRow<'a> = (Query<'a>, usize, Option<&'a str>, Option<&'a str>);

#[tokio::test]
async fn paging_headers_at_the_edges() {
    let (s, t) = setup().await;
    // 7 listed + 113 generated agreement services; the default page_size is 50.
    // (query, items and X-Element-Count, X-Total-Count, X-Total-Pages)
    let pages: &[PageRow] = &[
        (&[], 50, Some("120"), Some("3")),
        (&[("page_number", "3")], 20, Some("120"), Some("3")),
        (&[("page_number", "4")], 0, Some("120"), Some("3")),
        (
            &[("page_number", "0"), ("page_size", "7")],
            7,
            Some("120"),
            Some("18"),
        ),
        (
            &[("page_number", "1"), ("page_size", "7")],
            7,
            Some("120"),
            Some("18"),
        ),
        // page_size 0 still counts.
        (&[("page_size", "0")], 0, Some("120"), Some("0")),
        (
            &[("omit_total_count", "TRUE"), ("page_size", "5")],
            5,
            None,
            None,
        ),
    ];
    for (query, items, total, total_pages) in pages {
        let a = get(&s, &t, "/agreement-services", query).await;
        assert_eq!(a.status, 200, "{query:?}");
        assert_eq!(a.items().len(), *items, "{query:?}");
        let elements = items.to_string();
        assert_eq!(
            a.header("x-element-count"),
            Some(elements.as_str()),
            "{query:?}"
        );
        assert_eq!(a.header("x-total-count"), *total, "{query:?}");
        assert_eq!(a.header("x-total-pages"), *total_pages, "{query:?}");
        assert!(a.header("etag").is_some(), "{query:?}");
    }
    let ids = all_ids(&s, &t, "/agreement-services", &[], 50).await;
    assert_eq!(ids.len(), 120);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "default order is id ascending, no repeats"
    );
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

    // Each bad paging or shaping parameter is a 400 naming the parameter.
    for (name, value) in [
        ("page_size", "51"),
        ("page_size", "-1"),
        ("page_number", "-1"),
        ("page_number", "x"),
        ("return", "ALL"),
        ("omit_total_count", "maybe"),
        ("sort", "nope"),
    ] {
        let a = get(&s, &t, "/agreement-services", &[(name, value)]).await;
        let (code, message) = a.error();
        assert_eq!(
            (a.status, code.as_str()),
            (400, "BAD_REQUEST"),
            "{name}={value}"
        );
        assert!(message.contains(name), "{name}={value}: {message}");
    }
}

fn numbers(a: &Answer, field: &str) -> Vec<f64> {
    a.items().iter().filter_map(|v| v[field].as_f64()).collect()
}

#[tokio::test]
async fn sort_both_ways_and_stable() {
    let (s, t) = setup().await;
    for (sort, ascending) in [("minimum_amount", true), ("-minimum_amount", false)] {
        let a = get(
            &s,
            &t,
            "/agreement-services",
            &[("sort", sort), ("filter", "minimum_amount IS NOT NULL")],
        )
        .await;
        let n = numbers(&a, "minimum_amount");
        assert_eq!(n.len(), 50, "{sort}");
        assert!(
            n.windows(2).all(|w| if ascending {
                w[0] <= w[1]
            } else {
                w[0] >= w[1]
            }),
            "{sort} sorts numerically: {n:?}"
        );
    }
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
    let parsed: Vec<chrono::DateTime<chrono::FixedOffset>> = dates
        .items()
        .iter()
        .map(|v| chrono::DateTime::parse_from_rfc3339(v["start_date"].as_str().unwrap()).unwrap())
        .collect();
    assert!(parsed.windows(2).all(|w| w[0] >= w[1]));
    let a = get(
        &s,
        &t,
        "/agreement-services",
        &[("sort", "start_date,renewed")],
    )
    .await;
    let (_, message) = a.error();
    assert_eq!(a.status, 400);
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
    let cases: &[(&str, &[(&str, &str)])] = &[
        (
            "/actions",
            &[
                ("product_id", "1"),
                ("action_type", "invoice"),
                ("agreement_id", "1"),
                ("bill_cycle_id", "1"),
            ],
        ),
        (
            "/adjustment-applications",
            &[
                ("adjustment_id", "3"),
                ("billing_account_id", "4"),
                ("account_num", "ACC-1004"),
                ("occurred_on", "2026-11-03T12:00:00Z"),
                ("unapplied_amount", "4.25"),
                ("adjustment_application_type", "negative-invoice"),
            ],
        ),
        (
            "/adjustment-categories",
            &[("name", "Goodwill Credit"), ("status", "SUSPENDED")],
        ),
        (
            "/agreements",
            &[
                ("valid_from", "2024-01-01"),
                ("valid_to", "2027-12-31"),
                ("name", "Energy 24 months"),
                ("product_id", "4"),
                ("status", "INACTIVE"),
                ("termination_fee_currency_code", "EUR"),
                ("max_termination_fee_currency_code", "USD"),
            ],
        ),
        (
            "/agreement-services",
            &[
                ("service_id", "105"),
                ("service_resource_identifier", "gen-0105"),
                ("child_service_resource_identifier", "srv-compute-0001-vm-a"),
                ("product_id", "3"),
                ("billing_account_id", "2"),
                ("account_num", "ACC-1003"),
                ("external_account_num", "EXT-1005"),
                ("status", "TRIAL"),
            ],
        ),
        (
            "/bill-batches",
            &[
                ("bill_batch_type", "adhoc"),
                ("name", "November on-demand"),
                ("status", "SUSPENDED"),
                ("currency_code", "EUR"),
                ("billing_account_id", "3"),
                ("account_num", "ACC-1001"),
                ("external_account_num", "EXT-1003"),
            ],
        ),
        (
            "/bill-batches/1/billing-accounts",
            &[
                ("account_num", "ACC-1002"),
                ("external_account_num", "EXT-1005"),
            ],
        ),
    ];
    let cases = cases
        .iter()
        .flat_map(|(path, filters)| filters.iter().map(move |(n, v)| (*path, *n, *v)));
    for (path, name, value) in cases {
        let by_param = all_ids(&s, &t, path, &[(name, value)], 50).await;
        let filter = format!("{name} EQ '{value}'");
        let by_filter = all_ids(&s, &t, path, &[("filter", &filter)], 50).await;
        let everything = filtered(&s, &t, path, &format!("{filter} OR id IS NOT NULL")).await;
        assert!(
            !by_param.is_empty(),
            "{path}?{name}={value} matches something"
        );
        assert_eq!(
            by_param, by_filter,
            "{path}: {name} as parameter and in filter"
        );
        // A bill batch status replaces their default (ACTIVE) instead of narrowing it.
        if name != "status" || path != "/bill-batches" {
            assert!(
                (by_param.len() as i64) < everything.total(),
                "{path}?{name} narrows"
            );
        }
    }
    // Values outside an enumerated or currency set, or too long, are 400s naming the parameter.
    let long = "x".repeat(256);
    for (path, name, value) in [
        ("/actions", "action_type", "party"),
        ("/agreement-services", "status", "SLEEPING"),
        ("/bill-batches", "currency_code", "XXX"),
        ("/agreements", "termination_fee_currency_code", "usd1"),
        ("/adjustment-categories", "status", "ON"),
        ("/agreement-services", "product_id", "abc"),
        ("/agreement-services", "service_resource_identifier", &long),
    ] {
        let a = get(&s, &t, path, &[(name, value)]).await;
        let (_, message) = a.error();
        assert_eq!(a.status, 400, "{path}?{name}={value}");
        assert!(message.starts_with(name), "{path}?{name}: {message}");
    }
}

/// How many records a filter must select.
enum Selects {
    /// At least one.
    Some,
    /// Exactly this many.
    Exactly(usize),
}

/// What every record a filter selects satisfies.
type Each = fn(&Value) -> bool;

/// A March 2025 start date in the tenant's zone, America/Chicago: CST until 2 a.m. on
/// 9 March 2025, CDT after.
fn local_march_date(v: &Value) -> bool {
    let start = v["start_date"].as_str().unwrap_or("");
    let offset = if start < "2025-03-10" {
        "-06:00"
    } else {
        "-05:00"
    };
    start.starts_with("2025-03-") && start.ends_with(offset)
}

#[tokio::test]
async fn filter_reaches_fields_values_and_exact_decimals() {
    let (s, t) = setup().await;
    // (path, filter, how many it selects, what every selected record satisfies)
    let cases: &[(&str, &str, Selects, Each)] = &[
        (
            "/agreement-services",
            "minimum_amount GT '9.6' AND minimum_amount LT '100'",
            Selects::Some,
            |v| {
                v["minimum_amount"]
                    .as_f64()
                    .is_some_and(|m| m > 9.6 && m < 100.0)
            },
        ),
        (
            "/agreement-services",
            "agreement.id EQ '2' AND NOT status IN ('ACTIVE','TRIAL')",
            Selects::Some,
            |v| v["agreement"]["id"] == "2",
        ),
        (
            "/agreement-services",
            "true_up_charge_types EQ 'RECURRING'",
            Selects::Some,
            |v| {
                v["true_up_charge_types"]
                    .as_array()
                    .is_some_and(|a| a.contains(&json!("RECURRING")))
            },
        ),
        (
            "/agreement-services",
            "start_date GTE '2025-03-01' AND start_date LT '2025-04-01'",
            Selects::Some,
            local_march_date,
        ),
        // LIKE ignores case.
        (
            "/agreements",
            "name LIKE '%MONTHS'",
            Selects::Exactly(2),
            |v| v["name"].as_str().is_some_and(|n| n.ends_with("months")),
        ),
        // NEQ does not match null fields.
        (
            "/agreements",
            "minimum_amount_currency_type NEQ 'USD'",
            Selects::Exactly(0),
            |_| false,
        ),
        (
            "/adjustment-applications",
            "account_adjustment.amount GTE '40'",
            Selects::Some,
            |v| {
                v["account_adjustment"]["amount"]
                    .as_f64()
                    .is_some_and(|a| a >= 40.0)
            },
        ),
        (
            "/adjustment-applications",
            "account_adjustment.billing_account.external_account_num IS NULL",
            Selects::Some,
            |v| v["account_adjustment"]["billing_account"]["external_account_num"].is_null(),
        ),
    ];
    for (path, filter, selects, each) in cases {
        let a = filtered(&s, &t, path, filter).await;
        assert_eq!(a.status, 200, "{path} {filter}: {}", a.body);
        match selects {
            Selects::Some => assert!(!a.items().is_empty(), "{path} {filter} selects some"),
            Selects::Exactly(n) => {
                assert_eq!(a.items().len(), *n, "{path} {filter}: {}", a.body)
            }
        }
        for v in a.items() {
            assert!(each(v), "{path} {filter}: {v}");
        }
    }

    // Every boolean and reference field of the demo agreement services takes both kinds of
    // value, so filtering on it narrows and the two halves add up to the whole list.
    for (field, half, other_half) in [
        ("renewed", "EQ 'true'", "EQ 'false'"),
        ("next_service_pay_on_purchase", "EQ 'true'", "EQ 'false'"),
        ("preserve_service_price", "EQ 'true'", "EQ 'false'"),
        ("next_preserve_service_price", "EQ 'true'", "EQ 'false'"),
        ("omit_minimum_amount", "EQ 'true'", "EQ 'false'"),
        ("next_agreement.id", "IS NOT NULL", "IS NULL"),
        ("next_service_product.id", "IS NOT NULL", "IS NULL"),
        ("end_date", "IS NOT NULL", "IS NULL"),
        ("minimum_amount", "IS NOT NULL", "IS NULL"),
    ] {
        let path = "/agreement-services";
        let one = filtered(&s, &t, path, &format!("{field} {half}")).await;
        let other = filtered(&s, &t, path, &format!("{field} {other_half}")).await;
        assert!(one.total() > 0 && other.total() > 0, "{field}");
        assert_eq!(one.total() + other.total(), 120, "{field}");
        if half == "EQ 'true'" {
            let all_true = one.items().iter().all(|v| v[field] == json!(true));
            assert!(all_true, "{field}");
        }
    }

    for (filter, needle) in [
        ("name EQ 'x", "position 9"),
        ("(name EQ 'x'", "position 1"),
        ("bogus EQ 'x'", "unknown field 'bogus'"),
        ("minimum_amount LIKE '1%'", "LIKE does not apply"),
        ("renewed EQ 'maybe'", "true or false"),
        ("start_date GT 'soon'", "date"),
    ] {
        let a = filtered(&s, &t, "/agreement-services", filter).await;
        let (code, message) = a.error();
        assert_eq!((a.status, code.as_str()), (400, "BAD_REQUEST"), "{filter}");
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

    let minimal = get_with(
        &s,
        &t,
        "/agreement-services/1",
        ("Prefer", "return=minimal"),
    )
    .await;
    assert_eq!(minimal.body, simple.body);
    // (Prefer, Preference-Applied, the first agreement's adjustment category)
    for (prefer, category) in [
        ("return=representation", None),
        ("return=minimal", Some(json!({"id": "6"}))),
    ] {
        let a = get_with(&s, &t, "/agreements?page_size=2", ("Prefer", prefer)).await;
        assert_eq!(a.header("preference-applied"), Some(prefer), "{prefer}");
        let got = &a.items()[0]["adjustment_category"];
        match category {
            None => assert!(got["name"].is_string(), "{prefer}: {got}"),
            Some(c) => assert_eq!(got, &c, "{prefer}"),
        }
    }
    assert_eq!(minimal.header("preference-applied"), Some("return=minimal"));

    let etag = full.header("etag").unwrap().to_string();
    let again = get_with(&s, &t, "/agreement-services/1", ("If-None-Match", &etag)).await;
    assert_eq!(again.status, 304);
    let list = get(&s, &t, "/agreement-services", &[("page_size", "3")]).await;
    let tag = list.header("etag").unwrap().to_string();
    let page = "/agreement-services?page_size=3";
    assert_eq!(
        get_with(&s, &t, page, ("If-None-Match", &tag)).await.status,
        304
    );
    // A change to a listed record changes the tag; a refused one (unknown field) changes
    // nothing. (body, PUT status, status of the conditional GET after it)
    for (body, status, conditional) in [
        (json!({"renewed_by_mistake": true}), 400, 304),
        (json!({"omit_minimum_amount": true}), 200, 200),
    ] {
        let put = call(&s, &t, Method::PUT, "/agreement-services/1", Some(&body)).await;
        assert_eq!(put.status, status, "{body}: {}", put.body);
        let after = get_with(&s, &t, page, ("If-None-Match", &tag)).await;
        assert_eq!(after.status, conditional, "after {body}");
    }
}

#[tokio::test]
async fn lists_answer_bearer_tokens_and_refuse_strangers() {
    let (s, t) = setup().await;
    let token = s.token(&t, 300).await;
    let r = s
        .get_with_bearer(&format!("{B}/agreement-services?page_size=1"), &token)
        .await;
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
    for path in [
        "/actions?filter=name EQ 'nothing'",
        "/bill-cycles/1/actions?filter=name EQ 'nothing'",
        "/adjustment-applications?account_num=NOBODY",
        "/adjustment-applications?filter=account_num EQ 'NOBODY'",
        "/adjustment-categories?name=nothing",
        "/agreements?name=nothing",
        "/agreement-services?account_num=NOBODY",
        "/agreement-services/1/true-up-charge-type-relations?filter=true_up_charge_type EQ 'NONE'",
        "/bill-batches?name=nothing&expand=bill_batch_runs",
        "/bill-batches/1/billing-accounts?account_num=NOBODY",
        "/usage-events?reference_id=nobody",
    ] {
        let a = get(&s, &t, path, &[]).await;
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        assert_eq!(a.body, serde_json::json!([]), "{path}");
        assert_eq!(a.headers["x-total-count"], "0", "{path}");
        assert_eq!(a.headers["x-element-count"], "0", "{path}");
    }
}

#[tokio::test]
async fn unknown_ids_are_404() {
    let (s, t) = setup().await;
    let mut cases: Vec<Refusal> = [
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
    ]
    .into_iter()
    .map(|path| (Method::GET, path, None, 404, "does not exist"))
    .collect();
    cases.push((Method::DELETE, "/agreements/1", None, 405, ""));
    assert_refused(&s, &t, &cases).await;
}

#[tokio::test]
async fn sort_takes_at_most_eight_distinct_keys() {
    let (s, t) = setup().await;
    let nine = "/agreements?sort=id,name,agreement_period,status,end_action,\
                termination_fee_currency_code,max_termination_fee_currency_code,valid_from,valid_to";
    let eight = nine.rsplit_once(',').unwrap().0.split_once('=').unwrap().1;
    let a = get(&s, &t, "/agreements", &[("sort", eight)]).await;
    assert_eq!(a.status, 200, "{:?}", a.error());
    // 1,333 keys is the longest `id,id,...` within the query value bound (4000 characters):
    // the sort language itself refuses it; 2,001 keys is refused by the bound first.
    let repeated = format!("/agreements?sort={}", vec!["id"; 1333].join(","));
    let too_long = format!("/agreements?sort={}", vec!["id"; 2001].join(","));
    for (keys, path) in [("1,333", &repeated), ("2,001", &too_long)] {
        let started = std::time::Instant::now();
        let a = get(&s, &t, path, &[]).await;
        println!(
            "GET /agreements with {keys} sort keys: {} in {:?}",
            a.status,
            started.elapsed()
        );
    }
    let cases: Vec<Refusal> = vec![
        (Method::GET, nine, None, 400, "at most 8 keys"),
        (
            Method::GET,
            "/agreements?sort=-id,id",
            None,
            400,
            "'id' is named twice",
        ),
        (Method::GET, &repeated, None, 400, "named twice"),
        (
            Method::GET,
            &too_long,
            None,
            400,
            "sort: at most 4000 characters, found 6002",
        ),
    ];
    assert_refused(&s, &t, &cases).await;
}

#[tokio::test]
async fn texts_and_amounts_are_bounded() {
    let (s, t) = setup().await;
    let batch = |name: String| Some(json!({"bill_batch_type": "adhoc", "name": name}));
    let cases: Vec<Refusal> = vec![
        (
            Method::PUT,
            "/agreement-services/1",
            Some(json!({"end_action": "a".repeat(256)})),
            400,
            "end_action",
        ),
        (
            Method::POST,
            "/bill-batches",
            batch("n".repeat(1_000)),
            400,
            "name must be at most 255 characters, found 1000",
        ),
        (
            Method::PUT,
            "/agreement-services/1",
            Some(json!({"minimum_amount": 10_000_000_000_000_000_000_u64})),
            400,
            "18 integer digits",
        ),
    ];
    assert_refused(&s, &t, &cases).await;
    let started = std::time::Instant::now();
    let huge = call(
        &s,
        &t,
        Method::POST,
        "/bill-batches",
        batch("n".repeat(1_000_000)).as_ref(),
    )
    .await;
    println!(
        "POST /bill-batches with a 1,000,000-character name: {} in {:?}",
        huge.status,
        started.elapsed()
    );
    assert_eq!(huge.status, 400, "{}", huge.body);
    let made = call(
        &s,
        &t,
        Method::POST,
        "/bill-batches",
        batch("n".repeat(255)).as_ref(),
    )
    .await;
    assert!((200..300).contains(&made.status), "{}", made.body);
    assert_eq!(made.body["name"].as_str().map(str::len), Some(255));
}
