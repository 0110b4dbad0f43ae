//! The documents are derived from the types the answers are serialized from, so every member
//! a live answer carries is a documented property of its schema (response schemas leave
//! `additionalProperties` open, so schemathesis would not notice a member the document lacks),
//! and every bound the document states is the constant the server checks.

use e2e::openapi::DOCUMENTS;
use e2e::TestServer;
use reqwest::Method;
use serde_json::Value;

/// `schema` with its `$ref` followed (in `doc`'s components).
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => resolve(
            doc,
            &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        ),
        None => schema,
    }
}

/// The object schemas `schema` stands for: itself, its `allOf` parts, its non-null `oneOf`
/// alternatives.
fn parts<'a>(doc: &'a Value, schema: &'a Value, out: &mut Vec<&'a Value>) {
    let schema = resolve(doc, schema);
    out.push(schema);
    for part in schema["allOf"].as_array().into_iter().flatten() {
        parts(doc, part, out);
    }
    for part in schema["oneOf"].as_array().into_iter().flatten() {
        if part["type"] != "null" {
            parts(doc, part, out);
        }
    }
}

/// Members of `value` (at `at`) that `schema` does not document.
fn undocumented(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let mut schemas = Vec::new();
    parts(doc, schema, &mut schemas);
    match value {
        Value::Object(members) => {
            let properties: Vec<(&String, &Value)> = schemas
                .iter()
                .filter_map(|s| s["properties"].as_object())
                .flatten()
                .collect();
            let free = schemas.iter().any(|s| s["additionalProperties"] == true);
            for (name, member) in members {
                match properties.iter().find(|(p, _)| *p == name) {
                    Some((_, property)) => {
                        undocumented(doc, property, member, &format!("{at}.{name}"), out)
                    }
                    None if free => {}
                    None => out.push(format!("{at}.{name}")),
                }
            }
        }
        Value::Array(items) => {
            for s in &schemas {
                if let Some(item) = s.get("items") {
                    for (i, v) in items.iter().enumerate() {
                        undocumented(doc, item, v, &format!("{at}[{i}]"), out);
                    }
                }
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_member_of_a_live_answer_is_documented() {
    let s = TestServer::start().await;
    let tenant = s.create_tenant("members", "demo").await;
    let t = &tenant.id;
    // A fault rule, a checkpoint and a journal entry, so their lists are not empty.
    let rule = serde_json::json!({ "path": "/nothing/*", "status": 503 });
    let faults = format!("/sandbox/v1/tenants/{t}/faults");
    s.admin_call(Method::POST, &faults, Some(&rule)).await;
    let checkpoint = serde_json::json!({ "name": "members" });
    let checkpoints = format!("/sandbox/v1/tenants/{t}/checkpoints");
    s.admin_call(Method::POST, &checkpoints, Some(&checkpoint))
        .await;
    let docs = DOCUMENTS.map(|d| d.json());
    let mut problems = Vec::new();
    // Writes whose answers are checked too (and whose records the reads below list).
    let writes = [
        (0, "/billing/2/usage-events/bulk"),
        (0, "/billing/2/usage-events/simulate/bulk"),
        (1, "/collector-runs"),
        (1, "/glruns"),
    ];
    for (d, documented) in writes {
        let op = &docs[d]["paths"][documented]["post"];
        let body = &op["requestBody"]["content"]["application/json"]["example"];
        let served = if d == 1 {
            format!("/revenue/3{documented}")
        } else {
            documented.to_string()
        };
        let r = s
            .client
            .post(s.url(&served))
            .header("X-Api-Key", &tenant.api_key)
            .json(body)
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16().to_string();
        let answer: Value = r.json().await.expect("JSON");
        let schema = &op["responses"][&status]["content"]["application/json"]["schema"];
        assert!(
            status.starts_with('2') && schema.is_object(),
            "{served}: {status} {answer}"
        );
        undocumented(&docs[d], schema, &answer, &served, &mut problems);
    }
    // (document, documented path, served path); admin paths are called with the admin key.
    let b = |p: &str| (0, format!("/billing/2{p}"), format!("/billing/2{p}"));
    let c = |p: &str, served: &str| (1, p.to_string(), format!("/revenue/3{served}"));
    let a = |p: &str| {
        (
            2,
            format!("/sandbox/v1{p}"),
            format!("/sandbox/v1{}", p.replace("{id}", t)),
        )
    };
    let calls = [
        b("/actions"),
        b("/adjustment-applications"),
        b("/adjustment-categories"),
        b("/agreements"),
        b("/agreement-services"),
        (
            0,
            "/billing/2/usage-events".into(),
            "/billing/2/usage-events?reference_id=batch-1".into(),
        ),
        (
            0,
            "/billing/2/bill-batches".into(),
            "/billing/2/bill-batches?expand=bill_batch_runs.invoices".into(),
        ),
        (
            0,
            "/billing/2/bill-batches/{bill_batch_id}/billing-accounts".into(),
            "/billing/2/bill-batches/1/billing-accounts".into(),
        ),
        c("/ledgers", "/ledgers"),
        c(
            "/ledgers/{id}/calendar/years/{yid}",
            "/ledgers/1/calendar/years/4",
        ),
        c("/collectors", "/collectors"),
        c("/collector-runs", "/collector-runs"),
        c("/glruns", "/glruns"),
        c("/ledgers/chargeinfos", "/ledgers/chargeinfos"),
        c("/ledgers/{id}/chargeinfos", "/ledgers/1/chargeinfos"),
        a("/tenants"),
        a("/tenants/{id}/clock"),
        a("/tenants/{id}/faults"),
        a("/tenants/{id}/checkpoints"),
        a("/tenants/{id}/requests"),
    ];
    let mut members = 0;
    for (d, documented, served) in calls {
        let r = if d == 2 {
            s.admin(Method::GET, &served).send().await.expect("request")
        } else {
            s.get_with_key(&served, &tenant.api_key).await
        };
        assert_eq!(r.status(), 200, "{served}");
        let answer: Value = r.json().await.expect("JSON");
        assert!(
            answer.as_array().is_none_or(|a| !a.is_empty()),
            "{served}: empty, nothing checked"
        );
        members += answer.to_string().matches("\":").count();
        let doc = &docs[d];
        let schema = &doc["paths"][&documented]["get"]["responses"]["200"]["content"]
            ["application/json"]["schema"];
        assert!(schema.is_object(), "{documented}: no answer schema");
        undocumented(doc, schema, &answer, &served, &mut problems);
    }
    println!("{members} members of live answers checked");
    assert!(
        problems.is_empty(),
        "undocumented members:\n{}",
        problems.join("\n")
    );
}

#[test]
fn documented_bounds_are_the_constants_the_server_checks() {
    use shared::sandbox::{clock, faults};
    let [b, c, a] = DOCUMENTS.map(|d| d.json());
    let schema = |doc: &Value, name: &str, member: &str| {
        doc["components"]["schemas"][name]["properties"][member].clone()
    };
    let rule = |member: &str| schema(&a, "NewFaultRule", member);
    assert_eq!(rule("latency_ms")["maximum"], faults::MAX_LATENCY_MS);
    assert_eq!(rule("times")["maximum"], faults::MAX_TIMES);
    assert_eq!(rule("seed")["maximum"], faults::MAX_SEED);
    assert_eq!(rule("path")["maxLength"], faults::MAX_PATH_CHARS);
    let advance = schema(&a, "AdvanceClock", "seconds");
    assert_eq!(advance["maximum"], clock::MAX_ADVANCE_SECONDS);
    let fields = |member: &str| schema(&c, "LedgerFields", member);
    let ledgers = &shared::domain::ledgers::MAX_CUSTOMER_LIFETIME_MONTHS;
    assert_eq!(fields("expected_customer_lifetime")["maximum"], *ledgers);
    let categories = shared::domain::ledgers::MAX_LEDGER_CATEGORIES;
    assert_eq!(
        fields("billing_account_category_ids")["maxItems"],
        categories
    );
    let ids = schema(&c, "Ids", "ids");
    assert_eq!(ids["maxItems"], shared::domain::chargeinfo::MAX_DELETE_IDS);
    let overlap = schema(&c, "NewCollectorRun", "overlap_fetch_time");
    assert_eq!(
        overlap["maximum"],
        shared::domain::collect::MAX_OVERLAP_SECONDS
    );
    let events = schema(&b, "BulkRequest", "usage_events");
    assert_eq!(
        events["maxItems"],
        shared::domain::usage::MAX_EVENTS_PER_CALL
    );
}
