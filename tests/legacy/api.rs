//! Surface A over HTTP with real XML bodies: every entity (list, paging, query keys, get,
//! create, edit) and the faults each refuses with. The commands are in `commands.rs`.

use e2e::legacy::{attr, child, dec, opt_attr, Fault, Legacy};
use reqwest::Method;
use rust_decimal::Decimal;

#[tokio::test]
async fn billing_accounts_page_filter_get_create_and_edit() {
    let a = Legacy::start("demo").await;
    let page = a.get("billingAccounts?pageSize=2&pageNumber=2").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.content_type, "application/xml");
    let p = page.el();
    assert_eq!(p.name, "billingAccounts");
    let total: i64 = attr(p, "totalElements").parse().unwrap();
    assert!(total >= 6);
    assert_eq!(attr(p, "pageNumber"), "2");
    assert_eq!(attr(p, "pageSize"), "2");
    assert_eq!(attr(p, "elementCount"), "2");
    assert_eq!(attr(p, "totalPages"), ((total + 1) / 2).to_string());
    assert_eq!(attr(&p.children[0], "eid"), "3");

    let one = a.get("billingAccounts?accountNum=ACC-1005").await;
    let acc = &one.el().children;
    assert_eq!(acc.len(), 1);
    assert_eq!(attr(&acc[0], "status"), "SUSPENDED");
    let suspended = a.get("billingAccounts?status=SUSPENDED").await;
    assert!(suspended
        .el()
        .children
        .iter()
        .all(|c| attr(c, "status") == "SUSPENDED"));
    let invalid = |path| (Method::GET, path, None, 400, "VALIDATION_FAILURE", "");
    a.assert_faults(&[
        invalid("billingAccounts?status=ASLEEP"),
        invalid("billingAccounts?pageSize=0"),
        invalid("billingAccounts?pageNumber=x"),
        invalid("billingAccounts?billingAccountCategoryEid=one"),
        invalid("billingAccounts/abc"),
        (
            Method::GET,
            "billingAccounts/999999",
            None,
            404,
            "GENERAL",
            "",
        ),
    ])
    .await;

    let got = a.get("billingAccounts/1").await;
    let e = got.el();
    assert_eq!(e.name, "billingAccount");
    assert_eq!(attr(e, "accountNum"), "ACC-1001");
    assert_eq!(attr(e, "billType"), "EMAIL");
    assert_eq!(attr(e, "automaticRecurringPayment"), "true");
    assert_eq!(attr(child(e, "billingAccountCategory"), "eid"), "1");

    let created = a
        .post(
            "billingAccounts",
            r#"<?xml version="1.0"?><billingAccount xmlns="http://billing-sandbox.dev/xml/domain/1.28" accountNum="XML-1" name="Made over XML" billType="PAPER" automaticRecurringPayment="false" currencyType="EUR" startDate="2026-01-01"><billingAccountCategory eid="2"/></billingAccount>"#,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let c = created.el();
    assert_eq!(c.name, "createResponse");
    assert_eq!(attr(c, "successful"), "true");
    let eid = attr(c, "eid").to_string();
    let back = a.get(&format!("billingAccounts/{eid}")).await;
    let b = back.el();
    assert_eq!(attr(b, "accountNum"), "XML-1");
    assert_eq!(attr(b, "currencyType"), "EUR");
    assert_eq!(attr(b, "status"), "ACTIVE");
    assert_eq!(attr(b, "balance"), "0");
    assert_eq!(attr(b, "startDate"), "2026-01-01T00:00:00-06:00");
    assert_eq!(attr(child(b, "billingAccountCategory"), "eid"), "2");

    let dup = r#"<billingAccount accountNum="XML-1"/>"#;
    let mut cases: Vec<Fault> = vec![(
        Method::POST,
        "billingAccounts",
        Some(dup),
        409,
        "ALREADY_EXISTS",
        "",
    )];
    let bodies = [
        (r#"<billingAccount accountNum=" "/>"#, "accountNum"),
        (
            r#"<billingAccount accountNum="X2" automaticRecurringPayment="maybe"/>"#,
            "automaticRecurringPayment",
        ),
        (
            r#"<billingAccount accountNum="X2" billType="PIGEON"/>"#,
            "billType",
        ),
        (
            r#"<billingAccount accountNum="X2" colour="red"/>"#,
            "colour",
        ),
        (
            r#"<billingAccount accountNum="X2"><owner/></billingAccount>"#,
            "owner",
        ),
        (
            r#"<billingAccount accountNum="X2"><billingAccountCategory/></billingAccount>"#,
            "eid",
        ),
        (r#"<invoice accountNum="X2"/>"#, "billingAccount"),
        (r#"<billingAccount accountNum="X2""#, "malformed"),
    ];
    for (body, needle) in bodies {
        cases.push((
            Method::POST,
            "billingAccounts",
            Some(body),
            400,
            "VALIDATION_FAILURE",
            needle,
        ));
    }
    let unknown_category =
        r#"<billingAccount accountNum="X3"><billingAccountCategory eid="777"/></billingAccount>"#;
    cases.push((
        Method::POST,
        "billingAccounts",
        Some(unknown_category),
        404,
        "",
        "",
    ));
    a.assert_faults(&cases).await;
    assert_eq!(
        a.get("billingAccounts?accountNum=X3")
            .await
            .el()
            .children
            .len(),
        0,
        "nothing half-applied"
    );

    // Media types: a body must be application/xml.
    for ct in [Some("application/json"), Some("text/plain"), None] {
        let mut req =
            a.s.client
                .post(a.s.url("/t/s/r/1.28/billingAccounts"))
                .header("Authorization", a.t.basic_header())
                .body(r#"<billingAccount accountNum="CT-1"/>"#);
        if let Some(ct) = ct {
            req = req.header("Content-Type", ct);
        }
        let r = e2e::legacy::read(req.send().await.unwrap()).await;
        assert_eq!(r.status, 415, "{ct:?}");
        assert_eq!(r.fault().0, "VALIDATION_FAILURE");
    }

    // Edit: only what the body carries changes; read-only attributes echoed back are ignored.
    let edited = a
        .put(
            &format!("billingAccounts/{eid}"),
            &format!(r#"<billingAccount eid="{eid}" billType="EMAIL" name="Renamed" balance="999" status="ACTIVE" taxExempt="true"><billingAccountCategory eid="1"/></billingAccount>"#),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    let e = edited.el();
    assert_eq!(attr(e, "billType"), "EMAIL");
    assert_eq!(attr(e, "name"), "Renamed");
    assert_eq!(attr(e, "taxExempt"), "true");
    assert_eq!(attr(e, "balance"), "0");
    assert_eq!(attr(e, "accountNum"), "XML-1");
    assert_eq!(attr(child(e, "billingAccountCategory"), "eid"), "1");
    // Status is changed by commands, not edits; the eid is the path's; numbers are unique.
    let account = format!("billingAccounts/{eid}");
    let put = |body| (Method::PUT, account.as_str(), Some(body), 400, "", "");
    a.assert_faults(&[
        (
            Method::PUT,
            &account,
            Some(r#"<billingAccount status="SUSPENDED"/>"#),
            400,
            "",
            "suspend",
        ),
        put(r#"<billingAccount eid="1"/>"#),
        (
            Method::PUT,
            &account,
            Some(r#"<billingAccount accountNum="ACC-1001"/>"#),
            409,
            "ALREADY_EXISTS",
            "",
        ),
        (
            Method::PUT,
            "billingAccounts/424242",
            Some(r#"<billingAccount name="x"/>"#),
            404,
            "",
            "",
        ),
        (
            Method::DELETE,
            "billingAccounts/1",
            None,
            405,
            "GENERAL",
            "",
        ),
    ])
    .await;
}

#[tokio::test]
async fn categories_create_edit_and_filter() {
    let a = Legacy::start("demo").await;
    let created = a
        .post(
            "billingAccountCategories",
            r#"<billingAccountCategory name="Partners" type="BUSINESS" description="Resellers" status="BA_CATEGORY_ACTIVE" conversionCurrencyType="EUR"/>"#,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let eid = attr(created.el(), "eid").to_string();
    let got = a.get(&format!("billingAccountCategories/{eid}")).await;
    assert_eq!(attr(got.el(), "description"), "Resellers");
    assert_eq!(attr(got.el(), "conversionCurrencyType"), "EUR");
    for body in [
        r#"<billingAccountCategory description="x"/>"#,
        r#"<billingAccountCategory status="BA_CATEGORY_ACTIVE"/>"#,
        r#"<billingAccountCategory description="x" status="OPEN"/>"#,
        r#"<billingAccountCategory description="x" status="BA_CATEGORY_ACTIVE" conversionCurrencyType="XYZ"/>"#,
    ] {
        let r = a.post("billingAccountCategories", body).await;
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(r.fault().0, "VALIDATION_FAILURE");
    }
    let edited = a
        .put(
            &format!("billingAccountCategories/{eid}"),
            r#"<billingAccountCategory status="BA_CATEGORY_SUSPENDED"/>"#,
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(attr(edited.el(), "status"), "BA_CATEGORY_SUSPENDED");
    assert_eq!(attr(edited.el(), "name"), "Partners");
    let suspended = a
        .get("billingAccountCategories?status=BA_CATEGORY_SUSPENDED")
        .await;
    let eids: Vec<&str> = suspended
        .el()
        .children
        .iter()
        .map(|c| attr(c, "eid"))
        .collect();
    assert!(eids.contains(&eid.as_str()), "{eids:?}");
    assert_eq!(
        attr(suspended.el(), "totalElements"),
        eids.len().to_string()
    );
}

#[tokio::test]
async fn invoices_and_payments_create_edit_filter() {
    let a = Legacy::start("demo").await;
    let before = dec(a.get("billingAccounts/3").await.el(), "balance");
    let created = a
        .post(
            "invoices",
            r#"<invoice invoiceNum="XML-INV-1" amount="19.99" occurredOn="2026-11-20" dueDate="2026-12-20" description="Made over XML"><billingAccount eid="3"/></invoice>"#,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let eid = attr(created.el(), "eid").to_string();
    let inv = a.get(&format!("invoices/{eid}")).await;
    let i = inv.el();
    assert_eq!(attr(i, "status"), "OPEN");
    assert_eq!(attr(i, "amountToPay"), "19.99");
    assert_eq!(attr(child(i, "billingAccount"), "accountNum"), "ACC-1003");
    let after = dec(a.get("billingAccounts/3").await.el(), "balance");
    assert_eq!(after - before, "19.99".parse::<Decimal>().unwrap());

    let dup = a.post("invoices", r#"<invoice invoiceNum="XML-INV-1" amount="1" occurredOn="2026-11-20"><billingAccount eid="3"/></invoice>"#).await;
    assert_eq!(dup.status, 409);
    assert_eq!(dup.fault().0, "ALREADY_EXISTS");
    for body in [
        r#"<invoice invoiceNum="N1" amount="ten" occurredOn="2026-11-20"><billingAccount eid="3"/></invoice>"#,
        r#"<invoice invoiceNum="N1" amount="1" occurredOn="someday"><billingAccount eid="3"/></invoice>"#,
        r#"<invoice invoiceNum="N1" amount="1" occurredOn="2026-11-20"/>"#,
        r#"<invoice amount="1" occurredOn="2026-11-20"><billingAccount eid="3"/></invoice>"#,
    ] {
        let r = a.post("invoices", body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let by_account = a.get("invoices?accountNum=ACC-1003").await;
    assert!(by_account
        .el()
        .children
        .iter()
        .any(|c| attr(c, "eid") == eid));
    assert!(by_account
        .el()
        .children
        .iter()
        .all(|c| attr(child(c, "billingAccount"), "eid") == "3"));
    let by_eid = a.get("invoices?billingAccountEid=1&status=CLOSED").await;
    assert_eq!(attr(by_eid.el(), "totalElements"), "1");
    assert_eq!(attr(&by_eid.el().children[0], "invoiceNum"), "INV-0001");
    assert!(opt_attr(&by_eid.el().children[0], "paidDate").is_some());
    let by_num = a.get("invoices?invoiceNum=INV-0004").await;
    assert_eq!(attr(&by_num.el().children[0], "eid"), "4");
    let edited = a
        .put(
            &format!("invoices/{eid}"),
            r#"<invoice description="Corrected" dueDate="2026-12-31" amount="5000"/>"#,
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(attr(edited.el(), "description"), "Corrected");
    assert_eq!(
        attr(edited.el(), "amount"),
        "19.99",
        "amount is not editable"
    );

    let paid = a
        .post("payments", r#"<payment amount="25.50" reference="XML-PAY" description="by XML"><billingAccount eid="3"/><checkPayment/></payment>"#)
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let pid = attr(paid.el(), "eid").to_string();
    let p = a.get(&format!("payments/{pid}")).await;
    assert_eq!(attr(p.el(), "unappliedAmount"), "25.5");
    assert_eq!(attr(p.el(), "status"), "COMPLETED");
    assert!(p.el().children.iter().any(|c| c.name == "checkPayment"));
    assert_eq!(
        dec(a.get("billingAccounts/3").await.el(), "balance"),
        after,
        "an unapplied payment leaves the balance"
    );
    for body in [
        r#"<payment amount="1"/>"#,
        r#"<payment amount="-1"><billingAccount eid="3"/></payment>"#,
        r#"<payment amount="1"><billingAccount eid="3"/><checkPayment/><cashPayment/></payment>"#,
        r#"<payment amount="1"><billingAccount eid="3"/><bitcoinPayment/></payment>"#,
    ] {
        let r = a.post("payments", body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let edited = a
        .put(
            &format!("payments/{pid}"),
            r#"<payment reference="XML-PAY-2"/>"#,
        )
        .await;
    assert_eq!(attr(edited.el(), "reference"), "XML-PAY-2");
    let filtered = a.get("payments?reference=XML-PAY-2").await;
    assert_eq!(attr(filtered.el(), "totalElements"), "1");
    let by_account = a.get("payments?billingAccountEid=3").await;
    assert!(by_account
        .el()
        .children
        .iter()
        .any(|c| attr(c, "eid") == pid));
}

#[tokio::test]
async fn read_only_entities_share_ids_with_the_other_surfaces() {
    let a = Legacy::start("demo").await;
    let db = a.s.state.store.tenant_db(&a.t.id).unwrap();
    let (agreement, product, service_account): (String, String, i64) = db
        .read(|c| {
            Ok(c.query_row(
                "SELECT (SELECT name FROM agreements WHERE id = 1), (SELECT name FROM products WHERE id = 1), \
                 (SELECT s.billing_account_id FROM agreement_services t JOIN services s ON s.id = t.service_id WHERE t.id = 1)",
                [],
                |r| r.try_into(),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(attr(a.get("agreements/1").await.el(), "name"), agreement);
    assert_eq!(attr(a.get("products/1").await.el(), "name"), product);
    let svc = a.get("agreementServices/1").await;
    assert_eq!(
        attr(child(svc.el(), "billingAccount"), "eid"),
        service_account.to_string()
    );
    assert_eq!(attr(child(svc.el(), "agreement"), "eid"), "1");
    let list = a
        .get(&format!(
            "agreementServices?billingAccountEid={service_account}"
        ))
        .await;
    assert!(list
        .el()
        .children
        .iter()
        .all(|c| attr(child(c, "billingAccount"), "eid") == service_account.to_string()));
    for path in ["agreements", "agreementServices", "products", "usageEvents"] {
        let r = a.get(&format!("{path}?pageSize=1")).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.el().name, path);
        let write = a.post(path, "<x/>").await;
        assert_eq!(write.status, 405, "{path} is read-only");
        assert_eq!(write.fault().0, "GENERAL");
    }
    // An agreement's status key is free text there (the WADL lists no values): a value no
    // agreement has keeps nothing, where an enumerated key would be refused.
    let agreement_status = attr(a.get("agreements/1").await.el(), "status").to_string();
    let same = a
        .get(&format!("agreements?status={agreement_status}"))
        .await;
    assert_ne!(attr(same.el(), "totalElements"), "0");
    let none = a.get("agreements?status=NO_SUCH_STATUS").await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert_eq!(attr(none.el(), "totalElements"), "0");
    // A usage event stored by Surface B renders under its own id.
    let event_id: i64 = db
        .write(|tx| {
            tx.execute(
                "INSERT INTO usage_events (request_id, service_resource_identifier, billing_account_id, start_time, end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge, created_at) \
                 VALUES ('req-1', 'srv-compute-0001', 1, '2026-11-10T06:00:00.000Z', '2026-11-10T07:00:00.000Z', 'HOUR', '2.5', 'ref', '1', '3.75', '2026-11-01T07:00:00.000Z')",
                [],
            )?;
            Ok(tx.last_insert_rowid())
        })
        .await
        .unwrap();
    let ev = a.get(&format!("usageEvents/{event_id}")).await;
    let e = ev.el();
    assert_eq!(attr(e, "usageAmount"), "2.5");
    assert_eq!(attr(e, "totalCharge"), "3.75");
    assert_eq!(attr(e, "startTime"), "2026-11-10T00:00:00-06:00");
    assert_eq!(attr(child(e, "billingAccount"), "eid"), "1");
    let by_ref = a.get("usageEvents?referenceId=ref").await;
    assert_eq!(attr(by_ref.el(), "totalElements"), "1");
}

#[tokio::test]
async fn what_a_get_answers_can_be_put_back_unchanged() {
    let a = Legacy::start("demo").await;
    for path in [
        "billingAccounts/1",
        "billingAccountCategories/1",
        "invoices/2",
        "payments/1",
    ] {
        let before = a.get(path).await;
        assert_eq!(before.status, 200, "{path}");
        let put = a.put(path, &before.body).await;
        assert_eq!(put.status, 200, "{path}: {}", put.body);
        assert_eq!(put.el(), before.el(), "{path}");
        assert_eq!(a.get(path).await.el(), before.el(), "{path}");
    }
}

/// JAX-RS services ignore query parameters they do not declare (cache busters such as
/// `_=1700000000`, tracing parameters): the answer equals the one without them, while the
/// declared keys keep their validation.
#[tokio::test]
async fn unknown_query_parameters_are_ignored_and_known_ones_still_checked() {
    let a = Legacy::start("demo").await;
    let plain = a.get("billingAccounts?pageSize=2").await;
    assert_eq!(plain.status, 200, "{}", plain.body);
    for path in [
        "billingAccounts?pageSize=2&_=1700000000",
        "billingAccounts?_=1700000000&pageSize=2&traceId=abc&colour=red",
    ] {
        let busted = a.get(path).await;
        assert_eq!(busted.status, 200, "{path}: {}", busted.body);
        assert_eq!(busted.body, plain.body, "{path}");
    }
    let one = a.get("invoices?_=1&billingAccountEid=1").await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert!(one
        .el()
        .children
        .iter()
        .all(|c| attr(child(c, "billingAccount"), "eid") == "1"));
    let invalid = |path| (Method::GET, path, None, 400, "VALIDATION_FAILURE", "");
    a.assert_faults(&[
        invalid("billingAccounts?_=1&status=ASLEEP"),
        invalid("billingAccounts?_=1&pageSize=0"),
    ])
    .await;
}

/// A path with one trailing slash is the same resource as without it (collections, single
/// entities), query string kept.
#[tokio::test]
async fn a_trailing_slash_serves_the_same_resource() {
    let a = Legacy::start("demo").await;
    for (slashed, plain) in [
        ("billingAccounts/?pageSize=2", "billingAccounts?pageSize=2"),
        ("billingAccounts/1/", "billingAccounts/1"),
    ] {
        let got = a.get(slashed).await;
        assert_eq!(got.status, 200, "{slashed}: {}", got.body);
        assert_eq!(got.body, a.get(plain).await.body, "{slashed}");
    }
    let missing = a.get("noSuchCollection/").await;
    assert_eq!(missing.status, 404, "{}", missing.body);
}
