//! Client compatibility: the request examples of the spec (/work/shared/spec/interfaces.md)
//! and of the platform facts (platform-facts.md), replayed verbatim against the real router,
//! as a client written against the production platform would send them; each answer is
//! checked for its status and the content the example is about (not just a 2xx).
//!
//! One test per surface part; each starts its own server and demo tenant (time zone
//! America/Chicago, as `e2e::TestServer::create_tenant` makes them). The platform facts name
//! the Surface A commands addNote, billOnDemand, moveToBillCycle and invoice cancel without a
//! request example: their effects across surfaces are tested in `tests/legacy/commands_more.rs`;
//! PUT of every GET body, field by field, in the `roundtrip` tests of each surface.

use e2e::billing::{self, Answer};
use e2e::legacy::{attr, child, opt_attr, Legacy};
use e2e::revenue::Rev;
use e2e::{error_body, TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

// ---- Surface A -------------------------------------------------------------------------

/// The billing account sample of interfaces.md: billType PAPER, automaticRecurringPayment
/// false and a billingAccountCategory child carrying its own eid.
const ACCOUNT_SAMPLE: &str = r#"<billingAccount billType="PAPER" automaticRecurringPayment="false"><billingAccountCategory eid="1"/></billingAccount>"#;

/// The five paging attributes of a collection wrapper.
fn paging(a: &e2e::legacy::Answer) -> [i64; 5] {
    let e = a.el();
    [
        "pageNumber",
        "pageSize",
        "totalElements",
        "elementCount",
        "totalPages",
    ]
    .map(|k| {
        attr(e, k)
            .parse()
            .unwrap_or_else(|_| panic!("{k}: {}", a.body))
    })
}

#[tokio::test]
async fn surface_a_wadl_collections_and_the_account_sample() {
    let a = Legacy::start("demo").await;
    // "the WADL is the root with ?_wadl", both spellings of the root, no credentials
    for root in ["/t/s/r/1.28/?_wadl", "/t/s/r/1.28?_wadl"] {
        let r = a.s.client.get(a.s.url(root)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{root}");
        let body = r.text().await.unwrap();
        assert!(body.contains("application/xml"), "{root}");
        for collection in [
            "billingAccounts",
            "invoices",
            "payments",
            "billingAccountCategories",
        ] {
            assert!(
                body.contains(&format!("path=\"{collection}")),
                "{root}: {collection}"
            );
        }
    }

    // Collections: pageNumber (default 1) and pageSize (default 50) and the wrapper's
    // pageNumber, pageSize, totalElements, elementCount, totalPages.
    let all = a.get("billingAccounts").await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(all.el().name, "billingAccounts");
    assert_eq!(paging(&all), [1, 50, 6, 6, 1]);
    // a cache buster (or any unknown query parameter) is ignored, as JAX-RS does
    let busted = a.get("billingAccounts?_=1700000000").await;
    assert_eq!(busted.status, 200, "{}", busted.body);
    assert_eq!(paging(&busted), [1, 50, 6, 6, 1]);
    let page = a.get("billingAccounts?pageNumber=2&pageSize=4").await;
    assert_eq!(paging(&page), [2, 4, 6, 2, 2]);
    let eids: Vec<&str> = page.el().children.iter().map(|c| attr(c, "eid")).collect();
    assert_eq!(eids, ["5", "6"]);
    // per-entity query keys: billing account accountNum, status
    let one = a.get("billingAccounts?accountNum=ACC-1005").await;
    assert_eq!(paging(&one)[2], 1);
    assert_eq!(attr(&one.el().children[0], "status"), "SUSPENDED");
    let suspended = a.get("billingAccounts?status=SUSPENDED").await;
    assert!(suspended
        .el()
        .children
        .iter()
        .all(|c| attr(c, "status") == "SUSPENDED"));
    // invoice: invoiceNum, accountNum, billingAccountEid, status
    let inv = a.get("invoices?invoiceNum=INV-0001").await;
    assert_eq!(paging(&inv)[2], 1, "{}", inv.body);
    let inv_el = &inv.el().children[0];
    assert_eq!(attr(inv_el, "invoiceNum"), "INV-0001");
    for query in [
        "invoices?accountNum=ACC-1001",
        "invoices?billingAccountEid=1",
    ] {
        let r = a.get(query).await;
        assert_eq!(r.status, 200, "{query}: {}", r.body);
        assert!(paging(&r)[2] >= 1, "{query}");
        assert!(
            r.el()
                .children
                .iter()
                .all(|c| attr(child(c, "billingAccount"), "eid") == "1"),
            "{query}: {}",
            r.body
        );
    }
    let open = a.get("invoices?status=OPEN").await;
    assert!(open
        .el()
        .children
        .iter()
        .all(|c| attr(c, "status") == "OPEN"));
    // Single objects: <collection>/<eid>, every object has eid
    let acme = a.get("billingAccounts/1").await;
    assert_eq!(attr(acme.el(), "eid"), "1");
    assert_eq!(attr(acme.el(), "accountNum"), "ACC-1001");

    // The billing account sample, sent with Content-Type and Accept application/xml: created,
    // the create answer carries successful and the new eid.
    let created = a.post("billingAccounts", ACCOUNT_SAMPLE).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(attr(created.el(), "successful"), "true");
    let eid = attr(created.el(), "eid").to_string();
    let back = a.get(&format!("billingAccounts/{eid}")).await;
    let b = back.el();
    assert_eq!(attr(b, "billType"), "PAPER");
    assert_eq!(attr(b, "automaticRecurringPayment"), "false");
    assert_eq!(attr(child(b, "billingAccountCategory"), "eid"), "1");
    assert!(!attr(b, "accountNum").is_empty());
    // PUT edits parameters
    let edited = a
        .put(
            &format!("billingAccounts/{eid}"),
            r#"<billingAccount billType="EMAIL"/>"#,
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(attr(edited.el(), "billType"), "EMAIL");

    // BillingAccountCategory: description and status required
    let cat = a
        .post(
            "billingAccountCategories",
            r#"<billingAccountCategory type="SMB" description="Small business" status="BA_CATEGORY_ACTIVE"/>"#,
        )
        .await;
    assert_eq!(cat.status, 201, "{}", cat.body);
    let no_status = a
        .post(
            "billingAccountCategories",
            r#"<billingAccountCategory description="Small business"/>"#,
        )
        .await;
    assert_eq!(no_status.status, 400);
    assert_eq!(no_status.fault().0, "VALIDATION_FAILURE");
}

#[tokio::test]
async fn surface_a_apply_payment_on_invoices_and_accounts_and_faults() {
    let a = Legacy::start("demo").await;
    // "POST {legacy_root}/invoices/<eid>/applyPayment and POST
    // {legacy_root}/billingAccounts/<eid>/applyPayment": a payment (with one payment-method
    // child) answers a command response with successful and the resulting payment.
    let before = a.get("invoices/2").await;
    let to_pay: rust_decimal::Decimal = attr(before.el(), "amountToPay").parse().unwrap();
    assert!(to_pay > rust_decimal::Decimal::from(10), "{}", before.body);
    let on_invoice = a
        .post(
            "invoices/2/applyPayment",
            r#"<applyPayment><payment amount="10" reference="CHK-1"><checkPayment/></payment></applyPayment>"#,
        )
        .await;
    assert_eq!(on_invoice.status, 200, "{}", on_invoice.body);
    assert_eq!(attr(on_invoice.el(), "successful"), "true");
    let payment = child(on_invoice.el(), "payment");
    assert_eq!(attr(payment, "amount"), "10");
    let after = a.get("invoices/2").await;
    let paid: rust_decimal::Decimal = attr(after.el(), "amountToPay").parse().unwrap();
    assert_eq!(paid, to_pay - rust_decimal::Decimal::from(10));

    let on_account = a
        .post(
            "billingAccounts/2/applyPayment",
            r#"<applyPayment><payment amount="5.25"><cashPayment/></payment></applyPayment>"#,
        )
        .await;
    assert_eq!(on_account.status, 200, "{}", on_account.body);
    assert_eq!(attr(on_account.el(), "successful"), "true");
    assert_eq!(attr(child(on_account.el(), "payment"), "amount"), "5.25");

    // the status commands
    for (command, status) in [("suspend", "SUSPENDED"), ("resume", "ACTIVE")] {
        let r = a.post(&format!("billingAccounts/3/{command}"), "").await;
        assert_eq!(r.status, 200, "{command}: {}", r.body);
        let got = a.get("billingAccounts/3").await;
        assert_eq!(attr(got.el(), "status"), status, "{command}");
    }

    // Faults: a fault with failureReason (VALIDATION_FAILURE, ALREADY_EXISTS) and a message.
    let dup = a
        .post(
            "billingAccounts",
            r#"<billingAccount accountNum="ACC-1001"/>"#,
        )
        .await;
    assert_eq!(dup.status, 409);
    assert_eq!(dup.fault().0, "ALREADY_EXISTS");
    let bad = a
        .post(
            "payments",
            r#"<payment description="no amount"><billingAccount eid="1"/></payment>"#,
        )
        .await;
    assert_eq!(bad.status, 400);
    let (reason, message) = bad.fault();
    assert_eq!(reason, "VALIDATION_FAILURE");
    assert!(message.contains("amount"), "{message}");
    // "a body-carrying request needs the content-type header application/xml"
    let r =
        a.s.client
            .post(a.s.url("/t/s/r/1.28/billingAccounts"))
            .header("Authorization", a.t.basic_header())
            .body(ACCOUNT_SAMPLE)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 415);
    // Basic credentials identify the tenant; none is a 401
    let r =
        a.s.client
            .get(a.s.url("/t/s/r/1.28/billingAccounts"))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 401);
    assert!(opt_attr(a.get("users/current").await.el(), "username").is_some());
}

/// Every element of a collection GET (all pages of 50).
async fn elements(a: &Legacy, collection: &str) -> Vec<legacy::xml::Element> {
    let r = a.get(&format!("{collection}?pageSize=50")).await;
    assert_eq!(r.status, 200, "{collection}: {}", r.body);
    assert_eq!(paging(&r)[4], 1, "{collection} fits one page");
    r.el().children.clone()
}

#[tokio::test]
async fn surface_a_records_carry_the_platform_attributes() {
    let a = Legacy::start("demo").await;
    // BillingAccount: accountNum, billType (PAPER, EMAIL, PAPER_EMAIL, NONE), status (ACTIVE,
    // SUSPENDED, PENDING, COLLECTION, DEACTIVATED, FINAL_BILL, CLOSED), balance, currencyType
    for e in elements(&a, "billingAccounts").await {
        assert!(!attr(&e, "accountNum").is_empty());
        assert!(["PAPER", "EMAIL", "PAPER_EMAIL", "NONE"].contains(&attr(&e, "billType")));
        assert!([
            "ACTIVE",
            "SUSPENDED",
            "PENDING",
            "COLLECTION",
            "DEACTIVATED",
            "FINAL_BILL",
            "CLOSED"
        ]
        .contains(&attr(&e, "status")));
        for k in ["automaticRecurringPayment", "taxExempt"] {
            assert!(["true", "false"].contains(&attr(&e, k)), "{k}");
        }
        attr(&e, "balance")
            .parse::<rust_decimal::Decimal>()
            .unwrap();
        assert_eq!(attr(&e, "currencyType").len(), 3);
    }
    // Invoice: invoiceNum, amount, occurredOn, dueDate, amountToPay, status (PROCESSING, OPEN,
    // CLOSED)
    for e in elements(&a, "invoices").await {
        assert!(!attr(&e, "invoiceNum").is_empty());
        for k in ["amount", "amountToPay"] {
            attr(&e, k).parse::<rust_decimal::Decimal>().unwrap();
        }
        chrono::DateTime::parse_from_rfc3339(attr(&e, "occurredOn")).unwrap();
        assert!(["PROCESSING", "OPEN", "CLOSED"].contains(&attr(&e, "status")));
        if attr(&e, "status") == "CLOSED" {
            assert_eq!(
                attr(&e, "amountToPay")
                    .parse::<rust_decimal::Decimal>()
                    .unwrap(),
                rust_decimal::Decimal::ZERO
            );
        }
    }
    // Payment: amount, status, and one payment-method child (creditCardPayment,
    // checkPayment, cashPayment, ...)
    for e in elements(&a, "payments").await {
        attr(&e, "amount").parse::<rust_decimal::Decimal>().unwrap();
        assert!(!attr(&e, "status").is_empty());
        let methods: Vec<&str> = e
            .children
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| n.ends_with("Payment"))
            .collect();
        assert_eq!(methods.len(), 1, "{e:?}");
    }
    // BillingAccountCategory: description and status (BA_CATEGORY_ACTIVE, _SUSPENDED,
    // _CANCELED)
    for e in elements(&a, "billingAccountCategories").await {
        assert!(!attr(&e, "description").is_empty());
        assert!([
            "BA_CATEGORY_ACTIVE",
            "BA_CATEGORY_SUSPENDED",
            "BA_CATEGORY_CANCELED"
        ]
        .contains(&attr(&e, "status")));
    }
}

// ---- Surface B -------------------------------------------------------------------------

async fn get(s: &TestServer, t: &TestTenant, path: &str, query: &[(&str, &str)]) -> Answer {
    let a = billing::get(s, t, path, query).await;
    assert_eq!(a.status, 200, "{path} {query:?}: {}", a.body);
    a
}

/// The ids of the items (string ids parsed).
fn ids(a: &Answer) -> Vec<i64> {
    a.ids()
}

#[tokio::test]
async fn surface_b_filters_of_the_platform_facts() {
    let (s, t) = billing::setup().await;
    // currency_code EQ 'USD'
    let usd = get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "currency_code EQ 'USD'")],
    )
    .await;
    assert!(!usd.items().is_empty());
    assert!(
        usd.items().iter().all(|b| b["currency_code"] == "USD"),
        "{}",
        usd.body
    );
    let all = get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "status IN ('ACTIVE','SUSPENDED','CANCELED')")],
    )
    .await;
    assert!(all.items().iter().any(|b| b["currency_code"] != "USD"));

    // (start_date GT '2021-01-24T23:33:07+00:00'), parenthesised, a date-time with offset
    let since = get(
        &s,
        &t,
        "/agreement-services",
        &[("filter", "(start_date GT '2021-01-24T23:33:07+00:00')")],
    )
    .await;
    assert_eq!(
        since.total(),
        get(&s, &t, "/agreement-services", &[]).await.total()
    );
    let later = get(
        &s,
        &t,
        "/agreement-services",
        &[("filter", "(start_date GT '2025-06-01T00:00:00+00:00')")],
    )
    .await;
    assert!(later.total() < since.total());
    for a in later.items() {
        let start =
            chrono::DateTime::parse_from_rfc3339(a["start_date"].as_str().unwrap()).unwrap();
        assert!(start > chrono::DateTime::parse_from_rfc3339("2025-06-01T00:00:00+00:00").unwrap());
    }

    // accountnum GT '15' AND (name LIKE 'Acme%' OR status EQ 'ACTIVE'), verbatim, on the
    // bill batch list (fields name, status and account_num: `accountnum` is the platform's
    // spelling of account_num, as names match ignoring case and underscores). account_num
    // is many-valued on a batch (its accounts), so the predicate holds when some account of
    // the batch has a greater number. A new batch named Acme has no accounts: the account
    // predicate must exclude it although its name matches.
    let acme = billing::call(
        &s,
        &t,
        Method::POST,
        "/bill-batches",
        Some(&json!({"bill_batch_type": "adhoc", "name": "Acme Q4"})),
    )
    .await;
    assert_eq!(acme.status, 200, "{}", acme.body);
    let example = "accountnum GT '15' AND (name LIKE 'Acme%' OR status EQ 'ACTIVE')";
    let matched = get(&s, &t, "/bill-batches", &[("filter", example)]).await;
    // The expectation, computed from every batch and its accounts.
    let every = get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "status IN ('ACTIVE','SUSPENDED','CANCELED')")],
    )
    .await;
    let mut expected = Vec::new();
    for b in every.items() {
        let id = b["id"].as_str().unwrap();
        let accounts = get(&s, &t, &format!("/bill-batches/{id}/billing-accounts"), &[]).await;
        let numbered = accounts
            .items()
            .iter()
            .any(|a| a["account_num"].as_str().unwrap() > "15");
        let named = b["name"].as_str().unwrap().starts_with("Acme");
        if numbered && (named || b["status"] == "ACTIVE") {
            expected.push(id.parse::<i64>().unwrap());
        }
    }
    assert!(
        !expected.is_empty() && expected.len() < every.items().len(),
        "the example must select some batches and not all: {}",
        every.body
    );
    assert!(!expected.contains(&acme.body["id"].as_str().unwrap().parse().unwrap()));
    assert_eq!(ids(&matched), expected, "{}", matched.body);
    assert_eq!(matched.total(), expected.len() as i64);
    for b in matched.items() {
        assert_eq!(b["status"], "ACTIVE", "{b}");
    }
    // The platform's camel case spelling names the same field, in filters and in sort.
    let camel = get(
        &s,
        &t,
        "/bill-batches",
        &[
            (
                "filter",
                "accountNum GT '15' AND (Name LIKE 'Acme%' OR STATUS EQ 'ACTIVE')",
            ),
            ("sort", "-billBatchType"),
        ],
    )
    .await;
    let mut same_set = expected.clone();
    same_set.sort();
    let mut camel_ids = ids(&camel);
    camel_ids.sort();
    assert_eq!(camel_ids, same_set, "{}", camel.body);
    let types: Vec<&str> = camel
        .items()
        .iter()
        .map(|b| b["bill_batch_type"].as_str().unwrap())
        .collect();
    assert!(types.windows(2).all(|w| w[0] >= w[1]), "{types:?}");
    // A name that resolves to no field is still refused, naming it and its position.
    let refused = billing::get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "accountnumber GT '15'")],
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let (code, message) = refused.error();
    assert_eq!(code, "BAD_REQUEST");
    assert!(
        message.contains("accountnumber") && message.contains("position 1"),
        "{message}"
    );

    // IN takes at most 50 values
    let fifty: Vec<String> = (1..=50).map(|i| format!("'{i}'")).collect();
    let in50 = format!("id IN ({})", fifty.join(","));
    let r = get(
        &s,
        &t,
        "/agreement-services",
        &[("filter", &in50), ("page_size", "50")],
    )
    .await;
    assert!(ids(&r).iter().all(|id| (1..=50).contains(id)));
    let in51 = format!("id IN ({},'51')", fifty.join(","));
    let r = billing::get(&s, &t, "/agreement-services", &[("filter", &in51)]).await;
    assert_eq!(r.status, 400);

    // the operators of interfaces.md
    for filter in [
        "status NEQ 'ACTIVE'",
        "minimum_amount LT '300'",
        "minimum_amount LTE '250'",
        "minimum_amount GTE '250'",
        "end_date IS NULL",
        "end_date IS NOT NULL",
        "NOT status EQ 'ACTIVE'",
        "service_resource_identifier LIKE 'srv-_ompute%'",
    ] {
        get(&s, &t, "/agreement-services", &[("filter", filter)]).await;
    }
}

#[tokio::test]
async fn surface_b_list_parameters_and_headers() {
    let (s, t) = billing::setup().await;
    let path = "/agreement-services";
    // defaults: page_number 1, page_size 50, ascending by id; the paging headers
    let first = get(&s, &t, path, &[]).await;
    let total = first.total();
    assert!(total > 50);
    assert_eq!(first.items().len(), 50);
    for h in ["etag", "x-total-count", "x-element-count", "x-total-pages"] {
        assert!(first.header(h).is_some(), "{h}");
    }
    assert_eq!(first.header("x-element-count"), Some("50"));
    assert_eq!(
        first
            .header("x-total-pages")
            .unwrap()
            .parse::<i64>()
            .unwrap(),
        (total + 49) / 50
    );
    let first_ids = ids(&first);
    assert!(first_ids.windows(2).all(|w| w[0] < w[1]));
    // page_number 0 is allowed; page_size 0..50
    let zero = get(&s, &t, path, &[("page_number", "0"), ("page_size", "5")]).await;
    assert_eq!(ids(&zero), first_ids[..5]);
    let two = get(&s, &t, path, &[("page_number", "2"), ("page_size", "5")]).await;
    assert_eq!(ids(&two), first_ids[5..10]);
    assert_eq!(
        billing::get(&s, &t, path, &[("page_size", "51")])
            .await
            .status,
        400
    );
    // sort: a leading - sorts descending
    let desc = get(&s, &t, path, &[("sort", "-id"), ("page_size", "5")]).await;
    let d = ids(&desc);
    assert!(d.windows(2).all(|w| w[0] > w[1]), "{d:?}");
    assert_eq!(d[0], *all_ids(&s, &t, path).await.iter().max().unwrap());
    // only sortable parameters sort: another is a 400 naming it
    let unsortable = billing::get(&s, &t, path, &[("sort", "true_up_charge_types")]).await;
    assert_eq!(unsortable.status, 400, "{}", unsortable.body);
    assert!(unsortable.error().1.contains("true_up_charge_types"));
    // charge category types are the platform's
    let categories = get(&s, &t, "/adjustment-categories", &[]).await;
    for c in categories.items() {
        assert!(
            shared::domain::catalog::CHARGE_CATEGORY_TYPES
                .contains(&c["charge_category_type"].as_str().unwrap()),
            "{c}"
        );
    }
    // id: the internal identifier
    let by_id = get(&s, &t, path, &[("id", "5")]).await;
    assert_eq!(ids(&by_id), [5]);
    // omit_total_count=TRUE leaves out x-total-count and x-total-pages
    let omitted = get(
        &s,
        &t,
        path,
        &[("omit_total_count", "TRUE"), ("page_size", "3")],
    )
    .await;
    assert!(omitted.header("x-total-count").is_none());
    assert!(omitted.header("x-total-pages").is_none());
    assert_eq!(omitted.header("x-element-count"), Some("3"));

    // return SIMPLE equals Prefer: return=minimal, FULL equals return=representation
    let simple = get(&s, &t, "/agreement-services/5", &[("return", "SIMPLE")]).await;
    let minimal = billing::get_with(
        &s,
        &t,
        "/agreement-services/5",
        ("Prefer", "return=minimal"),
    )
    .await;
    assert_eq!(simple.body, minimal.body);
    assert_eq!(minimal.header("preference-applied"), Some("return=minimal"));
    let full = get(&s, &t, "/agreement-services/5", &[("return", "FULL")]).await;
    let representation = billing::get_with(
        &s,
        &t,
        "/agreement-services/5",
        ("Prefer", "return=representation"),
    )
    .await;
    assert_eq!(full.body, representation.body);
    assert_eq!(
        full.body,
        get(&s, &t, "/agreement-services/5", &[]).await.body,
        "FULL is the default"
    );
    let (f, m) = (
        full.body.as_object().unwrap(),
        simple.body.as_object().unwrap(),
    );
    assert!(m.len() < f.len() && m.keys().all(|k| f.contains_key(k)));
    assert_eq!(simple.body["id"], "5");

    // the named filters of the endpoint table
    let actions = get(&s, &t, "/actions", &[("action_type", "service")]).await;
    assert!(!actions.items().is_empty());
    assert!(actions
        .items()
        .iter()
        .all(|a| a["action_type"] == "service"));
    let srid = get(
        &s,
        &t,
        path,
        &[("service_resource_identifier", "srv-compute-0001")],
    )
    .await;
    assert_eq!(srid.total(), 1);
    let long = "x".repeat(256);
    assert_eq!(
        billing::get(&s, &t, path, &[("service_resource_identifier", &long)])
            .await
            .status,
        400,
        "the SRID filter takes up to 255 characters"
    );
    assert_eq!(
        get(
            &s,
            &t,
            path,
            &[("service_resource_identifier", &long[..255])]
        )
        .await
        .total(),
        0
    );
    // every named filter of the endpoint table narrows to what it names
    let named: &[(&str, &str, &str, &str)] = &[
        ("/actions", "action_type", "usage-rule", "action_type"),
        ("/adjustment-categories", "status", "ACTIVE", "status"),
        ("/agreements", "status", "ACTIVE", "status"),
        (
            "/agreements",
            "termination_fee_currency_code",
            "USD",
            "termination_fee_currency_code",
        ),
        ("/bill-batches", "currency_code", "USD", "currency_code"),
    ];
    for (list, key, value, field) in named {
        let r = get(&s, &t, list, &[(key, value)]).await;
        assert!(!r.items().is_empty(), "{list}?{key}={value}");
        for item in r.items() {
            let got = match &item[field] {
                Value::String(v) => v.clone(),
                other => other.to_string(),
            };
            assert_eq!(got, *value, "{list}?{key}={value}: {item}");
        }
    }
    // agreement services by status and by account: the named filter equals its predicate
    let all_services = all_ids(&s, &t, path).await;
    for (key, value, filter) in [
        ("status", "SUSPENDED", "status EQ 'SUSPENDED'"),
        ("account_num", "ACC-1001", "billing_account_id EQ '1'"),
        ("billing_account_id", "1", "billing_account_id EQ '1'"),
        ("product_id", "2", "product_id EQ '2'"),
    ] {
        let named = billing::all_ids(&s, &t, path, &[(key, value)], 50).await;
        let filtered = billing::all_ids(&s, &t, path, &[("filter", filter)], 50).await;
        assert!(
            !named.is_empty() && named.len() < all_services.len(),
            "{key}={value}"
        );
        assert_eq!(named, filtered, "{key}={value}");
    }
    let cycle = get(&s, &t, "/bill-cycles/1/actions", &[]).await;
    for action in cycle.items() {
        let id = action["id"].as_str().unwrap();
        assert_eq!(
            get(&s, &t, &format!("/bill-cycles/1/actions/{id}"), &[])
                .await
                .body,
            *action
        );
    }
    let types = get(
        &s,
        &t,
        "/adjustment-applications",
        &[("adjustment_application_type", "standard-invoice")],
    )
    .await;
    assert_eq!(
        types.header("x-element-count").unwrap(),
        types.items().len().to_string()
    );
    let members = get(
        &s,
        &t,
        "/bill-batches/1/billing-accounts",
        &[("account_num", "ACC-1001")],
    )
    .await;
    assert_eq!(members.items().len(), 1, "{}", members.body);
    assert_eq!(members.items()[0]["account_num"], "ACC-1001");
    // bill batches: status defaults to ACTIVE
    let batches = get(&s, &t, "/bill-batches", &[]).await;
    assert!(batches.items().iter().all(|b| b["status"] == "ACTIVE"));
    let canceled = get(&s, &t, "/bill-batches", &[("status", "CANCELED")]).await;
    assert!(canceled.items().iter().all(|b| b["status"] == "CANCELED"));
    // expand
    let expanded = get(&s, &t, "/bill-batches/1", &[("expand", "bill_batch_runs")]).await;
    assert!(
        expanded.body["bill_batch_runs"][0]["status"].is_string(),
        "{}",
        expanded.body
    );
}

/// Every id of a list.
async fn all_ids(s: &TestServer, t: &TestTenant, path: &str) -> Vec<i64> {
    billing::all_ids(s, t, path, &[], 50).await
}

#[tokio::test]
async fn surface_b_writes_answer_as_the_spec_lists() {
    let (s, t) = billing::setup().await;
    // POST /bill-batches: 200 BillBatch, header Preference-Applied
    let body = json!({"bill_batch_type": "adhoc", "description": "Compat", "invoice_date": "2026-12-01T00:00:00Z",
                      "auto_approve": false, "invoice_due_date": "2026-12-31T00:00:00Z", "name": "Compat batch",
                      "use_payment_term": true});
    let created = billing::call(&s, &t, Method::POST, "/bill-batches", Some(&body)).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert!(created.header("preference-applied").is_some());
    assert_eq!(created.body["name"], "Compat batch");
    let id = created.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        get(&s, &t, &format!("/bill-batches/{id}"), &[]).await.body["name"],
        "Compat batch"
    );

    // true-up relations: POST 201 with Preference-Applied, GET by id, DELETE 204 empty
    let path = "/agreement-services/1/true-up-charge-type-relations";
    let rel = billing::call(
        &s,
        &t,
        Method::POST,
        path,
        Some(&json!({"true_up_charge_type": "ONE_TIME"})),
    )
    .await;
    assert_eq!(rel.status, 201, "{}", rel.body);
    assert!(rel.header("preference-applied").is_some());
    assert_eq!(rel.body["true_up_charge_type"], "ONE_TIME");
    let rid = rel.body["id"].as_str().unwrap().to_string();
    let one = get(&s, &t, &format!("{path}/{rid}"), &[]).await;
    assert_eq!(one.body["agreement_service"]["id"], "1");
    let gone = billing::call(&s, &t, Method::DELETE, &format!("{path}/{rid}"), None).await;
    assert_eq!(gone.status, 204);
    assert_eq!(gone.body, Value::Null);
    assert_eq!(
        billing::get(&s, &t, &format!("{path}/{rid}"), &[])
            .await
            .status,
        404
    );

    // PUT /agreement-services/{id} with Prefer: 200 AgreementService, Preference-Applied
    let put = billing::send(
        s.client
            .put(s.url("/billing/2/agreement-services/1"))
            .header("Prefer", "return=representation")
            .json(&json!({"minimum_amount": 275.5, "omit_minimum_amount": false})),
        &t,
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(
        put.header("preference-applied"),
        Some("return=representation")
    );
    assert_eq!(put.body["minimum_amount"], json!(275.5));

    // errors are {code, message}: 400 bad request, 404 not found
    let (code, _) = billing::get(&s, &t, "/agreements", &[("filter", "name EQ")])
        .await
        .error();
    assert_eq!(code, "BAD_REQUEST");
    let (code, _) = billing::get(&s, &t, "/agreements/999999", &[])
        .await
        .error();
    assert_eq!(code, "NOT_FOUND");

    // both credential schemes of Surface B: X-Api-Key and a bearer JWT; none is a 401
    let token = s.token(&t, 600).await;
    let r = s.get_with_bearer("/billing/2/agreements", &token).await;
    assert_eq!(r.status(), 200);
    let r = s
        .client
        .get(s.url("/billing/2/agreements"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 401);
}

const BULK: &str = "/billing/2/usage-events/bulk";
const SIMULATE: &str = "/billing/2/usage-events/simulate/bulk";

async fn usage(s: &TestServer, t: &TestTenant, path: &str, mode: &str, events: Value) -> Value {
    let a = billing::send(
        s.client
            .post(s.url(path))
            .json(&json!({"mode": mode, "usage_events": events})),
        t,
    )
    .await;
    assert_eq!(a.status, 200, "{path}: {}", a.body);
    a.body
}

#[tokio::test]
async fn surface_b_usage_posting_simulation_and_overwrites() {
    let (s, t) = billing::setup().await;
    let event = json!({"start_time": "2026-02-01", "service_resource_identifier": "srv-compute-0001",
                       "usage_uom": "HOUR", "usage_amount": 2, "reference_id": "compat", "sequence_id": "1"});
    // simulation: full rating, nothing stored, no request_id
    let sim = usage(&s, &t, SIMULATE, "FAIL_ON_EXISTING", json!([event])).await;
    let simulated = &sim["rated_events"][0];
    assert!(simulated.get("request_id").is_none(), "{sim}");
    assert_eq!(simulated["overwrite_counter"], 0);
    assert!(simulated["total_charge"].is_number());
    let listed = get(&s, &t, "/usage-events", &[("reference_id", "compat")]).await;
    assert!(listed.items().is_empty(), "the simulation stored nothing");

    // posting: rated events with id and a UUID request_id, the event echoed
    let posted = usage(&s, &t, BULK, "FAIL_ON_EXISTING", json!([event])).await;
    let e = &posted["rated_events"][0];
    assert_eq!(posted["erred_events"], json!([]));
    let request_id = e["request_id"].as_str().unwrap();
    assert_eq!(request_id.len(), 36);
    assert_eq!(request_id.matches('-').count(), 4);
    assert!(e["id"].as_str().unwrap().parse::<i64>().unwrap() > 0);
    for field in [
        "service_resource_identifier",
        "usage_uom",
        "usage_amount",
        "reference_id",
        "sequence_id",
    ] {
        assert_eq!(e[field], event[field], "{field} is echoed");
    }
    assert_eq!(e["total_charge"], simulated["total_charge"]);
    assert_eq!(e["event_charges"][0]["charge"], e["total_charge"]);
    assert!(e["event_charges"][0]["usage_rule"]["id"].is_string());
    assert!(e["service_period"]["id"].is_string());
    // a date-only start_time is a date-time with the tenant's offset
    assert_eq!(e["start_time"], "2026-02-01T00:00:00-06:00");

    // the pair must not duplicate: FAIL_ON_EXISTING errs it
    let again = usage(&s, &t, BULK, "FAIL_ON_EXISTING", json!([event])).await;
    assert_eq!(again["rated_events"], json!([]));
    assert_eq!(again["erred_events"][0]["unrated_event"], event);

    // OVERWRITE_ON_EXISTING twice: the earlier events are voided, and retrieving by the pair
    // returns both voided events (and the live one)
    let mut changed = event.clone();
    changed["usage_amount"] = json!(3);
    let first = usage(&s, &t, BULK, "OVERWRITE_ON_EXISTING", json!([changed])).await;
    assert_eq!(first["rated_events"][0]["overwrite_counter"], 1);
    changed["usage_amount"] = json!(4);
    let second = usage(&s, &t, BULK, "OVERWRITE_ON_EXISTING", json!([changed])).await;
    assert_eq!(second["rated_events"][0]["overwrite_counter"], 2);
    let by_pair = get(
        &s,
        &t,
        "/usage-events",
        &[("reference_id", "compat"), ("sequence_id", "1")],
    )
    .await;
    let voided: Vec<bool> = by_pair
        .items()
        .iter()
        .map(|e| e["voided"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(voided, [true, true, false], "{}", by_pair.body);
    // by id: a voided event stays retrievable
    let first_id = e["id"].as_str().unwrap();
    let old = get(&s, &t, &format!("/usage-events/{first_id}"), &[]).await;
    assert_eq!(old.body["voided"], true);

    // "A date-only start_time such as 2018-12-25 is returned as a date-time with the tenant's
    // offset (2018-12-25T00:00:00-06:00)": verbatim, on a service running in 2018
    add_2018_service(&s, &t).await;
    let dated = json!({"start_time": "2018-12-25", "service_resource_identifier": "compat-2018",
                       "usage_uom": "HOUR", "usage_amount": 1});
    let r = usage(&s, &t, BULK, "FAIL_ON_EXISTING", json!([dated])).await;
    assert_eq!(r["erred_events"], json!([]), "{r}");
    assert_eq!(
        r["rated_events"][0]["start_time"],
        "2018-12-25T00:00:00-06:00"
    );

    // listing needs one narrowing parameter
    let r = billing::get(&s, &t, "/usage-events", &[]).await;
    assert_eq!(r.status, 400);
    // at most 50 events per call
    let fifty_one: Vec<Value> = (0..51)
        .map(|i| json!({"start_time": "2026-02-01", "service_resource_identifier": "srv-compute-0001",
                        "usage_uom": "HOUR", "usage_amount": 1, "reference_id": "many", "sequence_id": i.to_string()}))
        .collect();
    let r = billing::send(
        s.client
            .post(s.url(BULK))
            .json(&json!({"mode": "FAIL_ON_EXISTING", "usage_events": fifty_one})),
        &t,
    )
    .await;
    assert_eq!(r.status, 400);
}

/// An agreement service of demo product 1 (FLAT per HOUR) running from 2018 on account 1,
/// SRID `compat-2018`, through the domain functions the seed uses (no surface creates
/// services).
async fn add_2018_service(s: &TestServer, t: &TestTenant) {
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let tz = shared::time::parse_tz("America/Chicago").unwrap();
    db.write(move |tx| {
        let service: shared::domain::agreements::NewService = serde_json::from_value(json!({
            "billing_account_id": 1, "product_id": 1, "agreement_id": 1,
            "start_date": "2018-01-01", "resources": [{"identifier": "compat-2018"}]
        }))?;
        shared::domain::agreements::create_service(tx, &service, tz)?;
        Ok(())
    })
    .await
    .unwrap();
}

// ---- Surface C -------------------------------------------------------------------------

#[tokio::test]
async fn surface_c_paging_runs_ledgers_and_calendars() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    // paging: page_size default 25, headers X-Total-Count, X-Elements-Count, X-Total-Pages
    let (items, total, elements, pages) = c.paged("/collectors").await;
    assert_eq!(items.len() as i64, elements);
    assert!(elements <= 25);
    assert_eq!(pages, (total + 24) / 25);
    let (billing_group, _, _, _) = c.paged("/collectors?group=BILLING").await;
    assert!(!billing_group.is_empty());
    assert!(billing_group.iter().all(|x| x["group"] == "BILLING"));
    assert_eq!(
        c.call(Method::GET, "/collectors?page_size=51", None)
            .await
            .status(),
        400
    );
    assert_eq!(
        c.call(Method::GET, "/collectors?page_number=0", None)
            .await
            .status(),
        400
    );

    // POST /glruns {gl_run_mode_id, ledger_id, run_to_date} -> 201 run; by id; errors; DELETE 200
    let run = c
        .gl_run(json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let id = run["id"].as_i64().unwrap();
    assert_eq!(run["ledger_id"], 1);
    assert!(
        ["NOT_STARTED", "RUNNING", "ERROR", "COMPLETE"].contains(&run["status"].as_str().unwrap())
    );
    assert_eq!(c.get_ok(&format!("/glruns/{id}")).await["id"], id);
    let (errors, _, _, _) = c.paged(&format!("/glruns/{id}/errors")).await;
    assert!(errors.iter().all(|e| e["gl_run_id"] == id));
    let ledger_runs = c.get_ok("/ledgers/1/glruns").await;
    assert!(ledger_runs
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["id"] == id));
    let (complete, _, _, _) = c.paged("/glruns?status=COMPLETE").await;
    assert!(complete.iter().all(|r| r["status"] == "COMPLETE"));
    c.expect(Method::DELETE, &format!("/glruns/{id}"), None, 200)
        .await;
    assert_eq!(
        c.call(Method::GET, &format!("/glruns/{id}"), None)
            .await
            .status(),
        404
    );

    // POST /collector-runs {type, collector_operations[], data_fetch_from_date,
    // data_fetch_to_date, overlap_fetch_time} -> 201 collector run
    let collector = c
        .collect(json!({"type": "AUTO", "collector_operations": [],
                        "data_fetch_from_date": "2026-09-01T00:00:00Z",
                        "data_fetch_to_date": "2026-12-01T00:00:00Z", "overlap_fetch_time": 60}))
        .await;
    let cid = collector["id"].as_i64().unwrap();
    assert_eq!(collector["type"], "AUTO");
    // collector_operations "such as INSERT_SERVICES" (platform facts): the platform's name
    let named = c
        .collect(
            json!({"type": "AUTO", "collector_operations": ["INSERT_SERVICES"],
                        "data_fetch_from_date": "2026-09-01T00:00:00Z",
                        "data_fetch_to_date": "2026-12-01T00:00:00Z", "overlap_fetch_time": 60}),
        )
        .await;
    assert_eq!(
        named["collector_operations"],
        json!(["INSERT_SERVICES"]),
        "{named}"
    );
    assert_eq!(collector["overlap_fetch_time"], 60);
    assert!(["COMPLETE", "ERROR", "NOT_STARTED", "RUNNING"]
        .contains(&collector["status"].as_str().unwrap()));
    assert_eq!(c.get_ok(&format!("/collector-runs/{cid}")).await["id"], cid);
    c.paged(&format!("/collector-runs/{cid}/errors")).await;
    let (runs, _, _, _) = c.paged("/collector-runs").await;
    assert!(runs.iter().any(|r| r["id"] == cid));

    // ledgers: GET, POST 201, PUT 200, DELETE 200
    let ledger = c.get_ok("/ledgers/1").await;
    assert_eq!(ledger["id"], 1);
    for field in [
        "name",
        "status",
        "convert_currency",
        "billing_account_category_ids",
        "timezone_name",
        "calendar",
    ] {
        assert!(ledger.get(field).is_some(), "{field}");
    }
    let new = c
        .expect(
            Method::POST,
            "/ledgers",
            Some(
                json!({"name": "Compat ledger", "description": "d", "convert_currency": "NONE",
                         "chart_of_account_id": 1, "rule_set_id": 1, "run_mode_actuals_id": 1,
                         "billing_account_category_ids": [3], "expected_customer_lifetime": 12,
                         "create_zero_amount_entries": false}),
            ),
            201,
        )
        .await;
    let lid = new["id"].as_i64().unwrap();
    let (active, _, _, _) = c.paged("/ledgers?status=ACTIVE").await;
    assert!(active.iter().all(|l| l["status"] == "ACTIVE"));
    // the whole body GET answered, one field changed (read-only members ride along)
    let mut edit = new.clone();
    edit["description"] = json!("edited");
    let put = c
        .expect(Method::PUT, &format!("/ledgers/{lid}"), Some(edit), 200)
        .await;
    assert_eq!(put["description"], "edited");

    // calendar years with generate-periods=true: starts on the first of a month, ends one
    // or two years later; periods are created with it
    let with_year = c
        .expect(
            Method::POST,
            &format!("/ledgers/{lid}/calendar/years?generate-periods=true"),
            Some(
                json!({"name": "FY2027", "start_date": "2027-01-01", "end_date": "2027-12-31",
                         "accounting-periods": []}),
            ),
            200,
        )
        .await;
    let year = &with_year["calendar"]["years"][0];
    let yid = year["id"].as_i64().unwrap();
    let periods = year["accounting-periods"].as_array().unwrap();
    assert_eq!(periods.len(), 12, "{year}");
    let pid = periods[0]["id"].as_i64().unwrap();
    assert_eq!(
        c.get_ok(&format!("/ledgers/{lid}/calendar/years/{yid}"))
            .await["id"],
        yid
    );
    let mid_month = c
        .call(
            Method::POST,
            &format!("/ledgers/{lid}/calendar/years?generate-periods=true"),
            Some(json!({"name": "bad", "start_date": "2029-01-15", "end_date": "2030-01-14"})),
        )
        .await;
    assert_eq!(mid_month.status(), 400);
    // close and open a period: the full ledger answers, the history records both
    let period = format!("/ledgers/{lid}/calendar/years/{yid}/accounting-periods/{pid}");
    let closed = c
        .expect(Method::PUT, &format!("{period}/close"), None, 200)
        .await;
    assert_eq!(
        closed["calendar"]["years"][0]["accounting-periods"][0]["open"],
        false
    );
    let opened = c
        .expect(Method::PUT, &format!("{period}/open"), None, 200)
        .await;
    assert_eq!(
        opened["calendar"]["years"][0]["accounting-periods"][0]["open"],
        true
    );
    let (history, _, _, _) = c.paged(&format!("{period}/history")).await;
    let opens: Vec<bool> = history
        .iter()
        .map(|h| h["open"].as_bool().unwrap())
        .collect();
    assert!(
        opens.ends_with(&[false, true]) || opens.starts_with(&[true, false]),
        "{opens:?}"
    );
    c.expect(
        Method::DELETE,
        &format!("/ledgers/{lid}/calendar/years/{yid}"),
        None,
        200,
    )
    .await;
    c.expect(Method::DELETE, &format!("/ledgers/{lid}"), None, 200)
        .await;
    assert_eq!(
        c.call(Method::GET, &format!("/ledgers/{lid}"), None)
            .await
            .status(),
        404
    );

    // an invalid credential: 401 'Authentication failed.'
    let r = s.get_with_key("/revenue/3/ledgers", "not-a-key").await;
    let (status, _, message) = error_body(r).await;
    assert_eq!((status, message.as_str()), (401, "Authentication failed."));
}

#[tokio::test]
async fn surface_c_charge_infos_and_replication() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    c.collect(json!({"type": "AUTO", "collector_operations": [],
                     "data_fetch_from_date": "2026-09-01T00:00:00Z",
                     "data_fetch_to_date": "2026-12-01T00:00:00Z", "overlap_fetch_time": 0}))
        .await;
    let (all, total, _, _) = c.paged("/ledgers/chargeinfos").await;
    assert!(total > 0);
    for ci in &all {
        for field in [
            "id",
            "created_on",
            "billing_account_num",
            "core_id",
            "ci_values",
        ] {
            assert!(ci.get(field).is_some(), "{field}: {ci}");
        }
    }
    // max_records caps what the list considers
    let (_, capped, _, _) = c.paged("/ledgers/chargeinfos?max_records=1").await;
    assert_eq!(capped, 1);
    // created_from inclusive, created_to exclusive
    let created = all[0]["created_on"].as_str().unwrap().replace('+', "%2B");
    let (from, _, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?created_from={created}"))
        .await;
    assert!(from.iter().any(|x| x["id"] == all[0]["id"]));
    let (to, _, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?created_to={created}"))
        .await;
    assert!(to.iter().all(|x| x["id"] != all[0]["id"]));
    c.paged("/ledgers/merged-chargeinfos").await;
    // the ledger-scoped list carries charge_info_state_values
    c.gl_run(json!({"gl_run_mode_id": 1, "ledger_id": 1, "run_to_date": "2026-11-30"}))
        .await;
    let (scoped, _, _, _) = c.paged("/ledgers/1/chargeinfos").await;
    assert!(!scoped.is_empty());
    assert!(scoped
        .iter()
        .all(|x| x.get("charge_info_state_values").is_some()));
    let sid = scoped[0]["id"].as_i64().unwrap();
    c.expect(
        Method::DELETE,
        "/ledgers/1/chargeinfos/state",
        Some(json!({"ids": [sid]})),
        200,
    )
    .await;
    // DELETE /ledgers/chargeinfos {ids}
    let id = all[0]["id"].as_i64().unwrap();
    // A parent goes with its children (an invoice's parent record with its lines).
    let (_, children, _, _) = c
        .paged(&format!("/ledgers/chargeinfos?parent_id={id}"))
        .await;
    c.expect(
        Method::DELETE,
        "/ledgers/chargeinfos",
        Some(json!({"ids": [id]})),
        200,
    )
    .await;
    let (after, after_total, _, _) = c.paged("/ledgers/chargeinfos").await;
    assert_eq!(after_total, total - 1 - children);
    assert!(after.iter().all(|x| x["id"] != id && x["parent_id"] != id));
    // POST /replication/svs?batch_size=... -> 201
    let r = c
        .call(Method::POST, "/replication/svs?batch_size=100", None)
        .await;
    assert_eq!(r.status(), 201);
}
