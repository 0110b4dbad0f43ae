//! Surface A commands over HTTP with real XML bodies: applyPayment to an invoice and to an
//! account (oldest first), the status commands' transitions, and the faults they refuse with.

use e2e::legacy::{attr, child, dec, opt_attr, Legacy};
use reqwest::Method;
use rust_decimal::Decimal;

#[tokio::test]
async fn apply_payment_to_an_invoice() {
    let a = Legacy::start("demo").await;
    // Demo payment 2 (50, unapplied) on account 2 goes to invoice 3 (120 to pay).
    let balance = dec(a.get("billingAccounts/2").await.el(), "balance");
    let r = a
        .post(
            "invoices/3/applyPayment",
            r#"<applyPayment><payment eid="2"/></applyPayment>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let resp = r.el();
    assert_eq!(resp.name, "applyPaymentResponse");
    assert_eq!(attr(resp, "successful"), "true");
    assert_eq!(attr(child(resp, "payment"), "unappliedAmount"), "0");
    let application = child(resp, "paymentApplication");
    assert_eq!(attr(application, "amount"), "50");
    let inv = a.get("invoices/3").await;
    assert_eq!(attr(inv.el(), "amountToPay"), "70");
    assert_eq!(attr(inv.el(), "status"), "OPEN");
    assert!(opt_attr(inv.el(), "paidDate").is_none());
    let fifty: Decimal = "50".parse().unwrap();
    assert_eq!(
        dec(a.get("billingAccounts/2").await.el(), "balance"),
        balance - fifty
    );

    // Nothing left on payment 2.
    let again = a
        .post("invoices/4/applyPayment", r#"<payment eid="2"/>"#)
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.fault().0, "GENERAL");

    // A new payment larger than the invoice: it closes, the rest stays unapplied.
    let r = a
        .post("invoices/3/applyPayment", r#"<applyPayment><payment amount="100" reference="OVER"><cashPayment/></payment></applyPayment>"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pay = child(r.el(), "payment");
    assert_eq!(attr(pay, "amount"), "100");
    assert_eq!(attr(pay, "unappliedAmount"), "30");
    assert_eq!(attr(child(pay, "billingAccount"), "eid"), "2");
    let inv = a.get("invoices/3").await;
    assert_eq!(attr(inv.el(), "status"), "CLOSED");
    assert_eq!(attr(inv.el(), "amountToPay"), "0");
    assert!(opt_attr(inv.el(), "paidDate").is_some());
    assert_eq!(
        dec(a.get("billingAccounts/2").await.el(), "balance"),
        balance - "120".parse::<Decimal>().unwrap()
    );

    // A closed invoice, another account's payment, a payment naming another account, an
    // unknown invoice or payment, no payment, invoices listed on an invoice's command.
    let foreign = format!(r#"<payment eid="{}"/>"#, attr(pay, "eid"));
    let to_2 = |body, status| {
        (
            Method::POST,
            "invoices/2/applyPayment",
            Some(body),
            status,
            "",
            "",
        )
    };
    a.assert_faults(&[
        (Method::POST, "invoices/3/applyPayment", Some(r#"<payment amount="1"/>"#), 409, "", "CLOSED"),
        to_2(foreign.as_str(), 400),
        to_2(r#"<payment amount="5"><billingAccount eid="2"/></payment>"#, 400),
        (Method::POST, "invoices/999/applyPayment", Some(r#"<payment amount="5"/>"#), 404, "", ""),
        to_2(r#"<payment eid="999"/>"#, 404),
        to_2(r#"<applyPayment/>"#, 400),
        to_2(r#"<applyPayment><payment amount="5"/><invoices><invoice eid="2"/></invoices></applyPayment>"#, 400),
    ])
    .await;
    assert_eq!(
        attr(a.get("invoices/2").await.el(), "amountToPay"),
        "287.25",
        "refused commands change nothing"
    );
}

#[tokio::test]
async fn apply_payment_to_an_account_pays_oldest_first() {
    let a = Legacy::start("demo").await;
    let older = a
        .post("invoices", r#"<invoice invoiceNum="OLD-1" amount="10" occurredOn="2026-09-01"><billingAccount eid="2"/></invoice>"#)
        .await;
    let older = attr(older.el(), "eid").to_string();
    let balance = dec(a.get("billingAccounts/2").await.el(), "balance");
    let to_pay_3 = dec(a.get("invoices/3").await.el(), "amountToPay");
    let to_pay_4 = dec(a.get("invoices/4").await.el(), "amountToPay");
    let amount = Decimal::from(10) + to_pay_3 - Decimal::from(5);

    let r = a
        .post(
            "billingAccounts/2/applyPayment",
            &format!(r#"<applyPayment><payment amount="{amount}"><creditCardPayment/></payment></applyPayment>"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let apps: Vec<(&str, &str)> = r
        .el()
        .children
        .iter()
        .filter(|c| c.name == "paymentApplication")
        .map(|c| (attr(child(c, "invoice"), "eid"), attr(c, "amount")))
        .collect();
    let partial = (to_pay_3 - Decimal::from(5)).normalize().to_string();
    assert_eq!(apps, vec![(older.as_str(), "10"), ("3", partial.as_str())]);
    assert_eq!(
        attr(a.get(&format!("invoices/{older}")).await.el(), "status"),
        "CLOSED"
    );
    assert_eq!(
        dec(a.get("invoices/3").await.el(), "amountToPay"),
        Decimal::from(5)
    );
    assert_eq!(
        dec(a.get("invoices/4").await.el(), "amountToPay"),
        to_pay_4,
        "newest untouched"
    );
    assert_eq!(
        dec(a.get("billingAccounts/2").await.el(), "balance"),
        balance - amount
    );

    // Named invoices only, with a remainder that stays unapplied.
    let r = a
        .post(
            "billingAccounts/2/applyPayment",
            r#"<applyPayment><payment amount="200"/><invoices><invoice eid="4"/></invoices></applyPayment>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        dec(child(r.el(), "payment"), "unappliedAmount"),
        Decimal::from(200) - to_pay_4
    );
    assert_eq!(attr(a.get("invoices/4").await.el(), "status"), "CLOSED");
    assert_eq!(
        dec(a.get("invoices/3").await.el(), "amountToPay"),
        Decimal::from(5)
    );

    // No open invoices left but invoice 3: a big payment pays 5 and keeps the rest.
    let r = a
        .post(
            "billingAccounts/2/applyPayment",
            r#"<payment amount="40"/>"#,
        )
        .await;
    assert_eq!(
        dec(child(r.el(), "payment"), "unappliedAmount"),
        Decimal::from(35)
    );
    assert_eq!(
        dec(a.get("billingAccounts/2").await.el(), "balance"),
        Decimal::ZERO
    );
    let r = a
        .post("billingAccounts/2/applyPayment", r#"<payment amount="7"/>"#)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(attr(child(r.el(), "payment"), "unappliedAmount"), "7");
    assert!(!r
        .el()
        .children
        .iter()
        .any(|c| c.name == "paymentApplication"));

    // Invoice 2 belongs to account 1; account 999 does not exist.
    let foreign = r#"<applyPayment><payment amount="1"/><invoices><invoice eid="2"/></invoices></applyPayment>"#;
    a.assert_faults(&[
        (
            Method::POST,
            "billingAccounts/2/applyPayment",
            Some(foreign),
            400,
            "",
            "",
        ),
        (
            Method::POST,
            "billingAccounts/999/applyPayment",
            Some(r#"<payment amount="1"/>"#),
            404,
            "",
            "",
        ),
    ])
    .await;
}

#[tokio::test]
async fn status_commands_follow_valid_transitions() {
    let a = Legacy::start("demo").await;
    let r = a
        .call(Method::POST, "billingAccounts/1/suspend", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.el().name, "commandResponse");
    assert_eq!(attr(child(r.el(), "billingAccount"), "status"), "SUSPENDED");
    let again = a
        .call(Method::POST, "billingAccounts/1/suspend", None)
        .await;
    assert_eq!(again.status, 409);
    let (reason, message) = again.fault();
    assert_eq!(reason, "GENERAL");
    assert!(message.contains("SUSPENDED"), "{message}");
    let r = a.post("billingAccounts/1/resume", "<resume/>").await;
    assert_eq!(attr(child(r.el(), "billingAccount"), "status"), "ACTIVE");
    assert_eq!(
        a.call(Method::POST, "billingAccounts/1/resume", None)
            .await
            .status,
        409
    );
    let r = a
        .call(Method::POST, "billingAccounts/1/deactivate", None)
        .await;
    let acc = child(r.el(), "billingAccount");
    assert_eq!(attr(acc, "status"), "DEACTIVATED");
    assert!(opt_attr(acc, "endDate").is_some());
    // Nothing follows deactivate; an unknown account; a body that is not the command's.
    let suspend_2 = |body| {
        (
            Method::POST,
            "billingAccounts/2/suspend",
            Some(body),
            400,
            "",
            "",
        )
    };
    a.assert_faults(&[
        (Method::POST, "billingAccounts/1/suspend", None, 409, "", ""),
        (Method::POST, "billingAccounts/1/resume", None, 409, "", ""),
        (
            Method::POST,
            "billingAccounts/1/deactivate",
            None,
            409,
            "",
            "",
        ),
        (
            Method::POST,
            "billingAccounts/999/suspend",
            None,
            404,
            "",
            "",
        ),
        suspend_2("<resume/>"),
        suspend_2(r#"<suspend reason="x"/>"#),
    ])
    .await;
    let json =
        a.s.client
            .post(a.s.url("/t/s/r/1.28/billingAccounts/2/suspend"))
            .header("Authorization", a.t.basic_header())
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
    assert_eq!(json.status(), 415);
    assert_eq!(
        attr(a.get("billingAccounts/2").await.el(), "status"),
        "ACTIVE"
    );
}

/// POST ROOT/path with no body, with `origin` and the XML content type when given.
async fn bodiless(a: &Legacy, path: &str, origin: Option<&str>, xml: bool) -> e2e::legacy::Answer {
    let mut req =
        a.s.client
            .post(a.s.url(&format!("{}/{path}", e2e::legacy::ROOT)))
            .header("Authorization", a.t.basic_header());
    if let Some(origin) = origin {
        req = req.header("Origin", origin);
    }
    if xml {
        req = req.header("Content-Type", "application/xml");
    }
    e2e::legacy::read(req.send().await.expect("request")).await
}

async fn account_status(a: &Legacy, eid: u32) -> String {
    attr(
        a.get(&format!("billingAccounts/{eid}")).await.el(),
        "status",
    )
    .to_string()
}

/// A browser sends a body-less POST to any site without a CORS preflight, with the Basic
/// credentials it holds for this one: such a command from another origin is refused (403,
/// nothing applied) unless it carries the XML content type (which a browser sends
/// cross-origin only after a preflight). Non-browser clients send no Origin and are served.
#[tokio::test]
async fn a_bodiless_command_from_another_origin_is_refused() {
    let a = Legacy::start("demo").await;
    let before = account_status(&a, 1).await;
    for origin in ["http://evil.example", "null"] {
        let r = bodiless(&a, "billingAccounts/1/suspend", Some(origin), false).await;
        assert_eq!(r.status, 403, "{origin}: {}", r.body);
        let (reason, message) = r.fault();
        assert_eq!(reason, "GENERAL");
        assert!(message.contains("another origin"), "{message}");
        assert_eq!(account_status(&a, 1).await, before, "nothing applied");
    }
    // The same command with the XML content type (preflighted in a browser) is served.
    let evil = Some("http://evil.example");
    let r = bodiless(&a, "billingAccounts/1/suspend", evil, true).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(account_status(&a, 1).await, "SUSPENDED");
    // From this origin, or with no Origin (curl, SDKs): served without a content type.
    let r = bodiless(&a, "billingAccounts/1/resume", Some(&a.s.base), false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = bodiless(&a, "billingAccounts/1/suspend", None, false).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(account_status(&a, 1).await, "SUSPENDED");
}
