//! The platform's other billing account commands and invoice cancel:
//! `addNote` (read back at `billingAccounts/{eid}/notes` and `notes/{eid}`), `billOnDemand`
//! (the pending charges become an invoice), `moveToBillCycle` (seen in the account, its
//! filters and Surface B's bill-cycle actions), `invoices/{eid}/cancel`; each with its
//! effects on the other surfaces and the faults it refuses with.

use e2e::billing::{send, B};
use e2e::legacy::{attr, child, dec, opt_attr, Legacy};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

fn elements<'a>(
    e: &'a legacy::xml::Element,
    name: &'a str,
) -> impl Iterator<Item = &'a legacy::xml::Element> {
    e.children.iter().filter(move |c| c.name == name)
}

#[tokio::test]
async fn add_note_is_read_back_on_the_account() {
    let a = Legacy::start("demo").await;
    let r = a
        .post(
            "billingAccounts/1/addNote",
            r#"<addNote note="Called about the October invoice &amp; agreed a plan"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.el().name, "commandResponse");
    assert_eq!(attr(r.el(), "successful"), "true");
    let note = child(r.el(), "note");
    let eid = attr(note, "eid").to_string();
    assert_eq!(attr(r.el(), "eid"), eid);
    assert_eq!(
        attr(note, "note"),
        "Called about the October invoice & agreed a plan"
    );
    assert!(opt_attr(note, "createdOn").is_some());
    assert_eq!(attr(child(note, "billingAccount"), "eid"), "1");
    a.post("billingAccounts/1/addNote", r#"<addNote note="Second"/>"#)
        .await;
    a.post("billingAccounts/2/addNote", r#"<addNote note="Other"/>"#)
        .await;

    // the account's notes, oldest first; one note by eid; the collection filtered
    let page = a.get("billingAccounts/1/notes").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.el().name, "notes");
    assert_eq!(attr(page.el(), "totalElements"), "2");
    let texts: Vec<&str> = elements(page.el(), "note")
        .map(|n| attr(n, "note"))
        .collect();
    assert_eq!(
        texts,
        ["Called about the October invoice & agreed a plan", "Second"]
    );
    let one = a.get(&format!("notes/{eid}")).await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(attr(one.el(), "eid"), eid);
    let all = a.get("notes?billingAccountEid=2").await;
    assert_eq!(attr(all.el(), "totalElements"), "1");
    // Under an account the path decides: the key it sets, given in the query, is ignored.
    let under = a.get("billingAccounts/1/notes?billingAccountEid=2").await;
    assert_eq!(under.status, 200, "{}", under.body);
    assert_eq!(attr(under.el(), "totalElements"), "2");

    let long = format!(r#"<addNote note="{}"/>"#, "x".repeat(4001));
    a.assert_faults(&[
        (
            Method::POST,
            "billingAccounts/1/addNote",
            Some("<addNote/>"),
            400,
            "VALIDATION_FAILURE",
            "note",
        ),
        (
            Method::POST,
            "billingAccounts/1/addNote",
            Some(r#"<addNote note="  "/>"#),
            400,
            "VALIDATION_FAILURE",
            "note",
        ),
        (
            Method::POST,
            "billingAccounts/1/addNote",
            Some(&long),
            400,
            "VALIDATION_FAILURE",
            "4000",
        ),
        (
            Method::POST,
            "billingAccounts/1/addNote",
            Some(r#"<addNote note="a" color="red"/>"#),
            400,
            "VALIDATION_FAILURE",
            "color",
        ),
        (
            Method::POST,
            "billingAccounts/999/addNote",
            Some(r#"<addNote note="a"/>"#),
            404,
            "",
            "999",
        ),
        (
            Method::GET,
            "billingAccounts/999/notes",
            None,
            404,
            "",
            "999",
        ),
        (Method::GET, "notes/99999", None, 404, "", ""),
    ])
    .await;
}

/// Posts one hour of compute on ACC-1001 (demo account 1) over Surface B.
async fn post_usage(a: &Legacy, sequence: &str) {
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR",
         "usage_amount": 10, "start_time": "2026-11-10", "reference_id": "bod",
         "sequence_id": sequence}]});
    let r = send(
        a.s.client
            .post(a.s.url(&format!("{B}/usage-events/bulk")))
            .json(&body),
        &a.t,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["rated_events"].as_array().map(Vec::len), Some(1));
}

/// Runs Surface C's `invoices` collector (window: since the previous run) and answers the
/// invoice-level charge info of invoice `num` (the parents: each line is a child of its
/// invoice's record).
async fn collect_invoices(a: &Legacy, num: &str) -> Vec<Value> {
    let surface_c = |r: reqwest::RequestBuilder| r.header("X-Api-Key", &a.t.api_key).send();
    let run = surface_c(
        a.s.client
            .post(a.s.url("/revenue/3/collector-runs"))
            .json(&json!({"type": "MANUAL", "collector_operations": ["invoices"]})),
    )
    .await
    .expect("collector run");
    assert_eq!(run.status(), 201);
    let infos: Value = surface_c(a.s.client.get(a.s.url(&format!(
        "/revenue/3/ledgers/chargeinfos?invoice_number={num}&is_parent=true"
    ))))
    .await
    .expect("charge infos")
    .json()
    .await
    .expect("json");
    infos.as_array().expect("array").clone()
}

async fn account(a: &Legacy, eid: &str) -> (Decimal, Decimal) {
    let r = a.get(&format!("billingAccounts/{eid}")).await;
    (dec(r.el(), "balance"), dec(r.el(), "pendingChargesTotal"))
}

#[tokio::test]
async fn bill_on_demand_invoices_the_pending_charges_and_cancel_gives_them_back() {
    let a = Legacy::start("demo").await;
    post_usage(&a, "1").await;
    let (balance, pending) = account(&a, "1").await;
    assert!(pending > Decimal::ZERO, "usage left pending charges");

    let r = a
        .post(
            "billingAccounts/1/billOnDemand",
            r#"<billOnDemand description="Mid-cycle bill" dueDate="2026-12-31"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attr(r.el(), "successful"), "true");
    let invoice = child(r.el(), "invoice");
    let inv = attr(invoice, "eid").to_string();
    assert_eq!(attr(r.el(), "eid"), inv);
    assert_eq!(dec(invoice, "amount"), pending);
    assert_eq!(dec(invoice, "amountToPay"), pending);
    assert_eq!(attr(invoice, "status"), "OPEN");
    assert_eq!(attr(invoice, "invoiceType"), "ON_DEMAND");
    assert_eq!(attr(invoice, "description"), "Mid-cycle bill");
    assert!(attr(invoice, "dueDate").starts_with("2026-12-31"));
    let num = attr(invoice, "invoiceNum").to_string();
    assert!(num.starts_with("ACC-1001-"), "{num}");
    let account_after = child(r.el(), "billingAccount");
    assert_eq!(dec(account_after, "pendingChargesTotal"), Decimal::ZERO);
    assert_eq!(dec(account_after, "balance"), balance + pending);

    // the invoice is one of the account's invoices, on Surface A and in Surface C's charge info
    let list = a.get("invoices?billingAccountEid=1&status=OPEN").await;
    assert!(elements(list.el(), "invoice").any(|i| attr(i, "eid") == inv));
    assert_eq!(
        attr(
            a.get(&format!("invoices?invoiceNum={num}")).await.el(),
            "totalElements"
        ),
        "1"
    );
    let infos = collect_invoices(&a, &num).await;
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0]["billing_account_num"], "ACC-1001");

    // nothing pending any more: a second bill is refused; new usage can be billed again
    a.assert_faults(&[(
        Method::POST,
        "billingAccounts/1/billOnDemand",
        None,
        409,
        "GENERAL",
        "no pending charges",
    )])
    .await;

    // cancel: CANCELED, nothing to pay, the balance back, the charges pending again
    let r = a.post(&format!("invoices/{inv}/cancel"), "<cancel/>").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attr(r.el(), "successful"), "true");
    let canceled = child(r.el(), "invoice");
    assert_eq!(attr(canceled, "status"), "CANCELED");
    assert_eq!(dec(canceled, "amountToPay"), Decimal::ZERO);
    assert_eq!(dec(canceled, "amount"), pending, "the amount billed stays");
    assert_eq!(account(&a, "1").await, (balance, pending));
    let canceled_list = a.get("invoices?status=CANCELED").await;
    assert_eq!(attr(canceled_list.el(), "totalElements"), "1");
    // the next collector run reverses the collected invoice in charge info
    let infos = collect_invoices(&a, &num).await;
    let amounts: Vec<String> = infos
        .iter()
        .map(|i| i["ci_values"]["charge_amount"].to_string())
        .collect();
    assert_eq!(
        amounts,
        [pending.to_string(), format!("-{pending}")],
        "{infos:?}"
    );

    post_usage(&a, "2").await;
    let again = a
        .post("billingAccounts/1/billOnDemand", "<billOnDemand/>")
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let second = child(again.el(), "invoice");
    assert_eq!(dec(second, "amount"), pending + pending);
    assert_ne!(attr(second, "invoiceNum"), num);
    assert_eq!(
        opt_attr(second, "dueDate"),
        opt_attr(second, "occurredOn"),
        "due on receipt unless a dueDate is given"
    );
}

#[tokio::test]
async fn bill_on_demand_and_cancel_refusals() {
    let a = Legacy::start("demo").await;
    post_usage(&a, "1").await;
    let r = a
        .post(
            "billingAccounts/1/billOnDemand",
            r#"<billOnDemand dueDate="not a date"/>"#,
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    a.assert_faults(&[
        (
            Method::POST,
            "billingAccounts/999/billOnDemand",
            None,
            404,
            "",
            "999",
        ),
        (
            Method::POST,
            "billingAccounts/1/billOnDemand",
            Some(r#"<billOnDemand amount="5"/>"#),
            400,
            "VALIDATION_FAILURE",
            "amount",
        ),
        (
            Method::POST,
            "billingAccounts/1/billOnDemand",
            Some("<billNow/>"),
            400,
            "VALIDATION_FAILURE",
            "billOnDemand",
        ),
        (
            Method::POST,
            "billingAccounts/1/billOnDemand",
            Some(r#"<billOnDemand occurredOn="2026-11-20" dueDate="2026-11-01"/>"#),
            400,
            "VALIDATION_FAILURE",
            "dueDate",
        ),
        // demo account 6 has nothing pending
        (
            Method::POST,
            "billingAccounts/6/billOnDemand",
            None,
            409,
            "GENERAL",
            "no pending charges",
        ),
        // invoice 1 is paid (CLOSED); invoice 2 has a credit applied; 999 does not exist
        (
            Method::POST,
            "invoices/1/cancel",
            None,
            409,
            "GENERAL",
            "CLOSED",
        ),
        (
            Method::POST,
            "invoices/2/cancel",
            None,
            409,
            "GENERAL",
            "applied",
        ),
        (Method::POST, "invoices/999/cancel", None, 404, "", "999"),
        (
            Method::POST,
            "invoices/4/cancel",
            Some(r#"<cancel reason="x"/>"#),
            400,
            "VALIDATION_FAILURE",
            "reason",
        ),
    ])
    .await;
    // a plain invoice (not from billOnDemand, untouched: demo invoice 4, 95.10 on account 2)
    // cancels without touching pending charges
    let (balance, pending) = account(&a, "2").await;
    let r = a.post("invoices/4/cancel", "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (after_balance, after_pending) = account(&a, "2").await;
    assert_eq!(after_pending, pending);
    assert_eq!(after_balance, balance - "95.10".parse::<Decimal>().unwrap());
    a.assert_faults(&[
        (
            Method::POST,
            "invoices/4/cancel",
            None,
            409,
            "GENERAL",
            "CANCELED",
        ),
        (
            Method::POST,
            "invoices/4/applyPayment",
            Some(r#"<payment amount="5"/>"#),
            409,
            "GENERAL",
            "CANCELED",
        ),
    ])
    .await;
    // a CLOSED account is not billed; a DEACTIVATED one gets its final bill
    let closed = a
        .post(
            "billingAccounts",
            r#"<billingAccount accountNum="CLOSED-1" status="CLOSED"/>"#,
        )
        .await;
    assert_eq!(closed.status, 201, "{}", closed.body);
    let path = format!("billingAccounts/{}/billOnDemand", attr(closed.el(), "eid"));
    a.assert_faults(&[(Method::POST, &path, None, 409, "GENERAL", "CLOSED")])
        .await;
    let r = a.post("billingAccounts/1/deactivate", "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = a.post("billingAccounts/1/billOnDemand", "").await;
    assert_eq!(
        r.status, 200,
        "a deactivated account still gets its final bill: {}",
        r.body
    );
}

#[tokio::test]
async fn move_to_bill_cycle_is_seen_on_the_account_and_in_bill_cycle_actions() {
    let a = Legacy::start("demo").await;
    // account 1 bills on cycle 1 (the 1st); cycle 2 bills on the 15th
    let r = a
        .post(
            "billingAccounts/1/moveToBillCycle",
            r#"<moveToBillCycle><billCycle eid="2"/></moveToBillCycle>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attr(r.el(), "successful"), "true");
    let moved = child(r.el(), "billingAccount");
    assert_eq!(attr(child(moved, "billCycle"), "eid"), "2");
    let next = attr(moved, "nextInvoiceDate");
    assert_eq!(
        &next[8..10],
        "15",
        "the next invoice date is on the new cycle's day: {next}"
    );
    let read = a.get("billingAccounts/1").await;
    assert_eq!(attr(child(read.el(), "billCycle"), "eid"), "2");
    let on_two = a.get("billingAccounts?billCycleEid=2").await;
    assert!(elements(on_two.el(), "billingAccount").any(|b| attr(b, "eid") == "1"));
    let on_one = a.get("billingAccounts?billCycleEid=1").await;
    assert!(!elements(on_one.el(), "billingAccount").any(|b| attr(b, "eid") == "1"));

    // Surface B: the bill cycle the account now names is the one whose actions apply to it
    let cycle = attr(child(read.el(), "billCycle"), "eid");
    let actions = send(
        a.s.client
            .get(a.s.url(&format!("{B}/bill-cycles/{cycle}/actions"))),
        &a.t,
    )
    .await;
    assert_eq!(actions.status, 200, "{}", actions.body);
    assert_eq!(actions.body[0]["name"], "InvoiceReminder");
    let filtered = send(
        a.s.client
            .get(a.s.url(&format!("{B}/actions")))
            .query(&[("bill_cycle_id", cycle)]),
        &a.t,
    )
    .await;
    assert_eq!(filtered.body, actions.body);

    let r = a.post("billingAccounts/6/deactivate", "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let to =
        |cycle: &str| format!(r#"<moveToBillCycle><billCycle eid="{cycle}"/></moveToBillCycle>"#);
    let (two, one, unknown) = (to("2"), to("1"), to("99"));
    a.assert_faults(&[
        (
            Method::POST,
            "billingAccounts/1/moveToBillCycle",
            Some(&two),
            409,
            "GENERAL",
            "already",
        ),
        (
            Method::POST,
            "billingAccounts/1/moveToBillCycle",
            Some(&unknown),
            404,
            "",
            "99",
        ),
        (
            Method::POST,
            "billingAccounts/1/moveToBillCycle",
            Some("<moveToBillCycle/>"),
            400,
            "VALIDATION_FAILURE",
            "billCycle",
        ),
        (
            Method::POST,
            "billingAccounts/1/moveToBillCycle",
            None,
            400,
            "VALIDATION_FAILURE",
            "",
        ),
        (
            Method::POST,
            "billingAccounts/1/moveToBillCycle",
            Some(r#"<moveToBillCycle><billCycle/></moveToBillCycle>"#),
            400,
            "VALIDATION_FAILURE",
            "eid",
        ),
        (
            Method::POST,
            "billingAccounts/999/moveToBillCycle",
            Some(&one),
            404,
            "",
            "999",
        ),
        (
            Method::POST,
            "billingAccounts/6/moveToBillCycle",
            Some(&one),
            409,
            "GENERAL",
            "DEACTIVATED",
        ),
    ])
    .await;
}
