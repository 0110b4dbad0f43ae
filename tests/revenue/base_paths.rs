//! Surface C under both base paths: ours (`/revenue/3`, the docs') and the production
//! platform's (`/calypso/3`, platform-facts.md). One route table is mounted under each, so a
//! client written against the platform works unchanged: the same answers, one tenant's
//! state seen through either, the same errors, and the sandbox's powers (fault rules, the
//! journal) treat the platform's path as Surface C.

use e2e::{error_body, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

const OURS: &str = "/revenue/3";
const PLATFORM: &str = "/calypso/3";

/// Sends `method <prefix><path>` with the key and an optional body: (status, JSON body).
async fn call(
    s: &TestServer,
    key: &str,
    method: Method,
    url: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = s
        .client
        .request(method, s.url(url))
        .header("X-Api-Key", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
    };
    (status, json)
}

#[tokio::test]
async fn both_base_paths_serve_the_same_surface() {
    let s = TestServer::start().await;
    let t = s.create_tenant("calypso", "demo").await;
    let key = t.api_key.as_str();

    // Reads answer alike under both, paging headers included.
    for path in [
        "/collectors?page_size=2",
        "/ledgers",
        "/ledgers/1",
        "/glruns",
        "/ledgers/chargeinfos?page_size=3",
    ] {
        let ours = call(&s, key, Method::GET, &format!("{OURS}{path}"), None).await;
        let platform = call(&s, key, Method::GET, &format!("{PLATFORM}{path}"), None).await;
        assert_eq!(ours.0, 200, "{path}: {}", ours.1);
        assert_eq!(platform, ours, "{path}");
    }
    let r = s
        .get_with_key(&format!("{PLATFORM}/collectors?page_size=2"), key)
        .await;
    assert_eq!(r.headers()["x-elements-count"], "2");
    assert!(r.headers().contains_key("x-total-count"));

    // A write through the platform's path is the tenant's state under ours, and back.
    let (status, ledger) = call(
        &s,
        key,
        Method::POST,
        &format!("{PLATFORM}/ledgers"),
        Some(
            json!({"name": "Through calypso", "chart_of_account_id": 2, "rule_set_id": 1,
            "run_mode_actuals_id": 1, "convert_currency": "NONE"}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{ledger}");
    let id = ledger["id"].as_i64().expect("int64 id");
    let (status, seen) = call(&s, key, Method::GET, &format!("{OURS}/ledgers/{id}"), None).await;
    assert_eq!((status, &seen["name"]), (200, &json!("Through calypso")));
    let (status, _) = call(
        &s,
        key,
        Method::DELETE,
        &format!("{OURS}/ledgers/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &s,
        key,
        Method::GET,
        &format!("{PLATFORM}/ledgers/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 404);

    // Errors in the surface's shape: a bad key, an unknown id, an unknown path, a method
    // the path does not take, a trailing slash served as the path.
    let r = s
        .get_with_key(&format!("{PLATFORM}/ledgers"), "not-a-key")
        .await;
    let (status, _, message) = error_body(r).await;
    assert_eq!((status, message.as_str()), (401, "Authentication failed."));
    let r = s
        .get_with_key(&format!("{PLATFORM}/glruns/999999"), key)
        .await;
    assert_eq!(error_body(r).await.0, 404);
    let r = s.get_with_key(&format!("{PLATFORM}/nowhere"), key).await;
    let (status, _, message) = error_body(r).await;
    assert_eq!(status, 404);
    assert!(message.contains("/calypso/3/nowhere"), "{message}");
    let (status, body) = call(&s, key, Method::PUT, &format!("{PLATFORM}/glruns"), None).await;
    assert_eq!(status, 405, "{body}");
    let (status, _) = call(&s, key, Method::GET, &format!("{PLATFORM}/ledgers/"), None).await;
    assert_eq!(status, 200);
    // The platform's path is Surface C's, not a prefix of anything else.
    let (status, _) = call(&s, key, Method::GET, "/calypso/4/ledgers", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_sandbox_powers_see_the_platform_path_as_surface_c() {
    let s = TestServer::start().await;
    let t = s.create_tenant("calypso-powers", "demo").await;
    // A fault rule on the platform's path answers requests there (the tenant found by the
    // Surface C credential), in the surface's shape; our path is untouched.
    let r = s
        .admin_call(
            Method::POST,
            &format!("/sandbox/v1/tenants/{}/faults", t.id),
            Some(&json!({"method": "GET", "path": "/calypso/3/collectors", "status": 429})),
        )
        .await;
    assert_eq!(r.status(), 201);
    let r = s
        .get_with_key(&format!("{PLATFORM}/collectors"), &t.api_key)
        .await;
    assert!(r.headers().contains_key("x-sandbox-fault"));
    let (status, code, _) = error_body(r).await;
    assert_eq!(status, 429, "{code}");
    let r = s
        .get_with_key(&format!("{OURS}/collectors"), &t.api_key)
        .await;
    assert_eq!(r.status(), 200);
    // The journal records them as Surface C, under the path the client sent.
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{}/requests", t.id),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let entries: Vec<Value> = r.json().await.expect("json array");
    let seen: Vec<(&str, &str, u64)> = entries
        .iter()
        .filter(|e| e["surface"] == "C")
        .map(|e| {
            (
                e["path"].as_str().expect("path"),
                e["method"].as_str().expect("method"),
                e["status"].as_u64().expect("status"),
            )
        })
        .collect();
    assert!(
        seen.contains(&("/calypso/3/collectors", "GET", 429))
            && seen.contains(&("/revenue/3/collectors", "GET", 200)),
        "{seen:?}"
    );
}
