//! A usage event's unknown member nested 500,000 deep: the body is refused before the domain
//! (400 `{code, message}`, JSON bodies nest at most `shared::web::MAX_JSON_DEPTH` = 64
//! levels) instead of the event being erred and echoed back whole.

use e2e::billing::{post_raw, USAGE_BULK};
use e2e::{error_body, TestServer};
use serde_json::json;

#[tokio::test]
async fn a_body_nested_past_64_levels_is_refused_before_the_domain() {
    let s = TestServer::start().await;
    let t = s.create_tenant("deep", "demo").await;
    let levels = 500_000;
    let deep = format!(
        r#"{{"mode": "FAIL_ON_EXISTING", "usage_events": [{{"x": {}{}}}]}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    );
    let (status, code, message) = error_body(post_raw(&s, &t, USAGE_BULK, deep).await).await;
    assert_eq!(
        (status, code.as_str()),
        (400, "BAD_REQUEST"),
        "{}",
        &message[..message.len().min(300)]
    );
    assert!(
        message.contains("64 levels"),
        "{}",
        &message[..message.len().min(300)]
    );
    // Brackets inside strings do not count; 64 levels are read (the event is erred, not the
    // body refused).
    let at = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [{"x": "[[[[", "y": 0}]});
    let mut body = at.to_string();
    let nested = format!("{}{}", "[".repeat(60), "]".repeat(60));
    body = body.replace(r#""y":0"#, &format!(r#""y":{nested}"#));
    let r = post_raw(&s, &t, USAGE_BULK, body).await;
    assert_eq!(r.status(), 200);
}
