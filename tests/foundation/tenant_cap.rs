//! The number of tenants is bounded (`SANDBOX_MAX_TENANTS`, here 3): one more is a 409 in the
//! admin shape until one is deleted; `GET /sandbox/v1/tenants` is paged as the journal is
//! (`page_number`, `page_size` 1..100, counts in `X-Total-Count`).

use e2e::{error_body, listen, TestServer, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};
use shared::config::Config;
use shared::web::AppState;

#[tokio::test]
async fn tenants_are_bounded_and_their_list_is_paged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    config.max_tenants = 3;
    let state = AppState::new(config).expect("state");
    let s = TestServer::from_parts(listen(state.clone()).await, state, dir);
    let mut ids = Vec::new();
    for name in ["one", "two", "three"] {
        ids.push(s.create_tenant(name, "empty").await.id);
    }
    let body = json!({"name": "four", "seed": "empty"});
    let r = s
        .admin_call(Method::POST, "/sandbox/v1/tenants", Some(&body))
        .await;
    let (status, code, message) = error_body(r).await;
    assert_eq!((status, code.as_str()), (409, "CONFLICT"), "{message}");
    assert!(message.contains("SANDBOX_MAX_TENANTS"), "{message}");

    // Pages: two, then one; the counts name all three.
    let page = |query: &'static str| {
        let s = &s;
        async move {
            let r = s
                .admin_call(Method::GET, &format!("/sandbox/v1/tenants{query}"), None)
                .await;
            assert_eq!(r.status(), 200, "{query}");
            let total = r.headers()["x-total-count"]
                .to_str()
                .expect("count")
                .to_string();
            let names: Vec<String> = r
                .json::<Vec<Value>>()
                .await
                .expect("json")
                .iter()
                .map(|t| t["name"].as_str().expect("name").to_string())
                .collect();
            (total, names)
        }
    };
    assert_eq!(
        page("?page_size=2").await,
        ("3".to_string(), vec!["one".to_string(), "two".to_string()])
    );
    assert_eq!(
        page("?page_size=2&page_number=2").await,
        ("3".to_string(), vec!["three".to_string()])
    );
    s.assert_admin_refused(&[
        (
            Method::GET,
            "/sandbox/v1/tenants?page_size=101",
            None,
            400,
            "page_size",
        ),
        (
            Method::GET,
            "/sandbox/v1/tenants?page_number=0",
            None,
            400,
            "page_number",
        ),
    ])
    .await;

    // Deleting one frees a place.
    let one = format!("/sandbox/v1/tenants/{}", ids[0]);
    assert_eq!(s.admin_call(Method::DELETE, &one, None).await.status(), 204);
    s.create_tenant("four", "empty").await;
}
