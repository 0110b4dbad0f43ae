//! Billing accounts created without `accountNum` (the spec's own sample element carries
//! none): the platform numbers them `BA-` + the eid in eight digits, never reusing a number a
//! client chose; client-chosen numbers keep working and stay unique.

use e2e::legacy::{attr, child, Fault, Legacy};
use reqwest::Method;

/// The billing account sample of interfaces.md: billType PAPER, automaticRecurringPayment
/// false, a category child; no accountNum.
const SAMPLE: &str = r#"<billingAccount billType="PAPER" automaticRecurringPayment="false"><billingAccountCategory eid="1"/></billingAccount>"#;

async fn create(a: &Legacy, body: &str) -> i64 {
    let created = a.post("billingAccounts", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(attr(created.el(), "successful"), "true");
    attr(created.el(), "eid").parse().unwrap()
}

async fn account_num(a: &Legacy, eid: i64) -> String {
    let got = a.get(&format!("billingAccounts/{eid}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    attr(got.el(), "accountNum").to_string()
}

#[tokio::test]
async fn the_spec_sample_gets_a_generated_account_number() {
    let a = Legacy::start("demo").await;
    let eid = create(&a, SAMPLE).await;
    let got = a.get(&format!("billingAccounts/{eid}")).await;
    let e = got.el();
    let number = format!("BA-{eid:08}");
    assert_eq!(attr(e, "accountNum"), number);
    assert_eq!(attr(e, "name"), number, "the name defaults to the number");
    assert_eq!(attr(e, "billType"), "PAPER");
    assert_eq!(attr(e, "automaticRecurringPayment"), "false");
    assert_eq!(attr(e, "status"), "ACTIVE");
    assert_eq!(attr(child(e, "billingAccountCategory"), "eid"), "1");
    // found by its number like any account
    let found = a.get(&format!("billingAccounts?accountNum={number}")).await;
    assert_eq!(found.el().children.len(), 1, "{}", found.body);

    // A client that already took the number the next generated account would get: the
    // generated number steps aside with a suffix, the client's stays.
    let taken = format!("BA-{:08}", eid + 2);
    let client = create(
        &a,
        &format!(r#"<billingAccount accountNum="{taken}" billType="EMAIL"/>"#),
    )
    .await;
    assert_eq!(client, eid + 1);
    let next = create(&a, SAMPLE).await;
    assert_eq!(next, eid + 2);
    assert_eq!(account_num(&a, client).await, taken);
    assert_eq!(account_num(&a, next).await, format!("{taken}-2"));

    // a client-chosen number equal to a generated one is taken, as any number is
    let dup = format!(r#"<billingAccount accountNum="{number}"/>"#);
    let cases: Vec<Fault> = vec![(
        Method::POST,
        "billingAccounts",
        Some(&dup),
        409,
        "ALREADY_EXISTS",
        "",
    )];
    a.assert_faults(&cases).await;
}
