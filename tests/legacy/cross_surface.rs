//! One record, one identity: a billing account created over XML is the row the other
//! surfaces read. It joins the ACTIVE bill batches of its category, and credits added to it
//! with `addAdjustment` are the adjustment applications Surface B filters by account_num.

use e2e::legacy::{attr, child, dec, Legacy};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Creates account `num` in category 2 (the demo's ACTIVE bill batch 2 bills that category)
/// with one open invoice of 40, and answers (account eid, invoice eid).
async fn account_with_invoice(a: &Legacy, num: &str) -> (String, String) {
    let r = a
        .post(
            "billingAccounts",
            &format!(r#"<billingAccount accountNum="{num}" name="Cross surface"><billingAccountCategory eid="2"/></billingAccount>"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let eid = attr(r.el(), "eid").to_string();
    let r = a
        .post(
            "invoices",
            &format!(r#"<invoice invoiceNum="{num}-INV" amount="40" occurredOn="2026-11-02"><billingAccount eid="{eid}"/></invoice>"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    (eid, attr(r.el(), "eid").to_string())
}

#[tokio::test]
async fn add_adjustment_credits_and_pays_down_an_invoice() {
    let a = Legacy::start("demo").await;
    let (eid, inv) = account_with_invoice(&a, "XML-ADJ").await;
    let r = a
        .post(
            &format!("billingAccounts/{eid}/addAdjustment"),
            &format!(r#"<addAdjustment amount="15" description="Goodwill"><invoice eid="{inv}"/><reason eid="1"/></addAdjustment>"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attr(r.el(), "appliedAmount"), "15");
    assert_eq!(attr(child(r.el(), "billingAccount"), "balance"), "25");
    assert_eq!(
        attr(a.get(&format!("invoices/{inv}")).await.el(), "amountToPay"),
        "25"
    );
    let r = a
        .post(
            &format!("billingAccounts/{eid}/addAdjustment"),
            &format!(r#"<addAdjustment amount="50"><invoice eid="{inv}"/></addAdjustment>"#),
        )
        .await;
    assert_eq!(attr(r.el(), "appliedAmount"), "25");
    let invoice = a.get(&format!("invoices/{inv}")).await;
    assert_eq!(attr(invoice.el(), "status"), "CLOSED");
    assert_eq!(
        dec(
            a.get(&format!("billingAccounts/{eid}")).await.el(),
            "balance"
        ),
        Decimal::ZERO
    );

    for (body, status) in [
        (
            r#"<addAdjustment description="no amount"/>"#.to_string(),
            400,
        ),
        (
            r#"<addAdjustment amount="5" adjustmentType="DEBIT"/>"#.to_string(),
            400,
        ),
        (r#"<addAdjustment amount="0"/>"#.to_string(), 400),
        (
            r#"<addAdjustment amount="5"><invoice eid="2"/></addAdjustment>"#.to_string(),
            400,
        ),
        (
            format!(r#"<addAdjustment amount="5"><invoice eid="{inv}"/></addAdjustment>"#),
            409,
        ),
        (
            r#"<addAdjustment amount="5"><reason eid="999"/></addAdjustment>"#.to_string(),
            404,
        ),
    ] {
        let r = a
            .post(&format!("billingAccounts/{eid}/addAdjustment"), &body)
            .await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
    }
    assert_eq!(
        a.post(
            "billingAccounts/999/addAdjustment",
            r#"<addAdjustment amount="5"/>"#
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn an_xml_account_is_the_same_record_in_the_tenant_database() {
    let a = Legacy::start("demo").await;
    let (eid, inv) = account_with_invoice(&a, "XML-CROSS").await;
    a.post(
        &format!("billingAccounts/{eid}/addAdjustment"),
        &format!(r#"<addAdjustment amount="15"><invoice eid="{inv}"/></addAdjustment>"#),
    )
    .await;
    let id: i64 = eid.parse().unwrap();
    let db = a.s.state.store.tenant_db(&a.t.id).unwrap();
    let (num, batches, applications) = db
        .read(move |c| {
            let num: String = c.query_row("SELECT account_num FROM billing_accounts WHERE id = ?1", [id], |r| r.get(0))?;
            let mut s = c.prepare("SELECT bill_batch_id FROM bill_batch_accounts WHERE billing_account_id = ?1 ORDER BY 1")?;
            let batches = s.query_map([id], |r| r.get::<_, i64>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
            let mut s = c.prepare(
                "SELECT aa.amount FROM adjustment_applications aa JOIN account_adjustments a ON a.id = aa.adjustment_id \
                 JOIN billing_accounts b ON b.id = a.billing_account_id WHERE b.account_num = 'XML-CROSS'",
            )?;
            let apps = s.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((num, batches, apps))
        })
        .await
        .unwrap();
    assert_eq!(num, "XML-CROSS");
    let active_category_2: Vec<i64> = db
        .read(|c| {
            let mut s = c.prepare("SELECT id FROM bill_batches WHERE billing_account_category_id = 2 AND status = 'ACTIVE' ORDER BY id")?;
            let ids = s.query_map([], |r| r.get::<_, i64>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(ids)
        })
        .await
        .unwrap();
    assert!(!active_category_2.is_empty());
    assert_eq!(batches, active_category_2);
    assert_eq!(applications, vec!["15".to_string()]);

    // Moving the account to category 1 over XML adds category 1's ACTIVE batches.
    let r = a
        .put(
            &format!("billingAccounts/{eid}"),
            r#"<billingAccount><billingAccountCategory eid="1"/></billingAccount>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let joined: i64 = db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM bill_batch_accounts x JOIN bill_batches b ON b.id = x.bill_batch_id \
                 WHERE x.billing_account_id = ?1 AND b.billing_account_category_id = 1",
                [id],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert!(joined >= 1);
}

/// GET a Surface B path with the tenant's API key; answers status and JSON body.
async fn surface_b(a: &Legacy, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    let r =
        a.s.client
            .get(a.s.url(&format!("/billing/2{path}")))
            .query(query)
            .header("X-Api-Key", &a.t.api_key)
            .send()
            .await
            .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.expect("JSON body"))
}

#[tokio::test]
async fn an_xml_account_appears_in_surface_b_bill_batches_and_adjustment_applications() {
    let a = Legacy::start("demo").await;
    let (eid, inv) = account_with_invoice(&a, "XML-B").await;
    let r = a
        .post(
            &format!("billingAccounts/{eid}/addAdjustment"),
            &format!(r#"<addAdjustment amount="15" description="XML credit" occurredOn="2026-11-10"><invoice eid="{inv}"/></addAdjustment>"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let adjustment = attr(r.el(), "eid").to_string();

    // The demo's ACTIVE bill batch 2 bills category 2, which the XML account joined.
    let (status, accounts) = surface_b(&a, "/bill-batches/2/billing-accounts", &[]).await;
    assert_eq!(status, 200, "{accounts}");
    let mine: Vec<&Value> = accounts
        .as_array()
        .expect("a JSON array")
        .iter()
        .filter(|x| x["account_num"] == "XML-B")
        .collect();
    assert_eq!(mine.len(), 1, "{accounts}");
    assert_eq!(mine[0]["id"], json!(eid), "one identity on both surfaces");
    let (_, filtered) = surface_b(
        &a,
        "/bill-batches/2/billing-accounts",
        &[("filter", "account_num EQ 'XML-B'")],
    )
    .await;
    assert_eq!(filtered.as_array().map(Vec::len), Some(1), "{filtered}");
    let (_, batches) = surface_b(&a, "/bill-batches", &[("account_num", "XML-B")]).await;
    let batch_ids: Vec<&Value> = batches
        .as_array()
        .expect("array")
        .iter()
        .map(|b| &b["id"])
        .collect();
    assert!(batch_ids.contains(&&json!("2")), "{batches}");

    // The credit's application is what Surface B's adjustment-application filters find.
    for query in [
        vec![("filter", "account_num EQ 'XML-B'")],
        vec![("account_num", "XML-B")],
    ] {
        let (status, apps) = surface_b(&a, "/adjustment-applications", &query).await;
        assert_eq!(status, 200, "{apps}");
        let apps = apps.as_array().expect("array");
        assert_eq!(apps.len(), 1, "{query:?}: {apps:?}");
        let adj = &apps[0]["account_adjustment"];
        assert_eq!(adj["id"], json!(adjustment));
        assert_eq!(adj["amount"], json!(15));
        assert_eq!(adj["unapplied_amount"], json!(0));
        assert_eq!(adj["billing_account"]["id"], json!(eid));
        assert_eq!(adj["billing_account"]["account_num"], "XML-B");
        assert_eq!(adj["occurred_on"], "2026-11-10T00:00:00-06:00");
    }

    // Edits over XML are what Surface B reads next.
    let r = a
        .put(
            &format!("billingAccounts/{eid}"),
            r#"<billingAccount accountNum="XML-B2"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, renamed) = surface_b(
        &a,
        "/bill-batches/2/billing-accounts",
        &[("account_num", "XML-B2")],
    )
    .await;
    assert_eq!(renamed[0]["id"], json!(eid), "{renamed}");
}
