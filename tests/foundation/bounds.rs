//! The admin API's query strings and dates are bounded like every surface's (docs/limits.md):
//! journal filters beyond them answer 400 `{code, message}` naming the input.

use e2e::TestServer;
use reqwest::Method;

#[tokio::test]
async fn journal_filters_are_bounded() {
    let s = TestServer::start().await;
    let t = s.create_tenant("journal-bounds", "empty").await;
    let base = format!("/sandbox/v1/tenants/{}/requests", t.id);
    let long_method = format!("{base}?method={}", "M".repeat(4001));
    let many = format!(
        "{base}?{}",
        (0..65)
            .map(|i| format!("x{i}=1"))
            .collect::<Vec<_>>()
            .join("&")
    );
    let year_zero = format!("{base}?from=0000-01-01");
    let year_10000 = format!("{base}?to=%2B10000-01-01");
    s.assert_admin_refused(&[
        (
            Method::GET,
            &long_method,
            None,
            400,
            "method: at most 4000 characters",
        ),
        (Method::GET, &many, None, 400, "65 parameters, at most 64"),
        (
            Method::GET,
            &year_zero,
            None,
            400,
            "from: '0000-01-01' is not a date",
        ),
        (
            Method::GET,
            &year_10000,
            None,
            400,
            "to: '+10000-01-01' is not a date",
        ),
    ])
    .await;
    // Within the bounds: read.
    let r = s
        .admin_call(
            Method::GET,
            &format!("{base}?from=0001-01-01&to=9999-12-31"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
}
