//! S3 requests per kind of call, counted at the S3 server (moto behind a counting proxy), so
//! that a regression in the price of a call shows as a failing test. Targets: a
//! read of a known tenant costs one GET-class request and no LIST on every surface; a write
//! request one PUT and nothing else when nobody else wrote (its fault rules are checked inside
//! the write's transaction, not by a GET before it). Cold starts and unknown
//! credentials are printed separately. Run with `--nocapture` to see the table.

use e2e::s3::{open_store, try_insert_reason, Moto};
use e2e::s3_count::{issue_token, serve_s3, Counter, Counts};
use e2e::ADMIN_KEY;
use serde_json::{json, Value};

/// Token secret of the servers under measure.
const SECRET: &str = "a-token-secret-of-at-least-32-characters";

struct Call {
    name: &'static str,
    request: reqwest::RequestBuilder,
    status: u16,
}

/// Sends `call` and answers the S3 requests it caused.
async fn measure(counter: &Counter, call: Call) -> Counts {
    counter.take();
    let r = call.request.send().await.expect("request");
    let status = r.status().as_u16();
    let body = r.text().await.unwrap_or_default();
    assert_eq!(status, call.status, "{}: {body}", call.name);
    let counts = counter.take_counts();
    println!("{:<42} {counts}", call.name);
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_requests_per_call() {
    let moto = Moto::start();
    let config = moto.bucket("costs");
    let counter = Counter::start(&moto);
    let mut proxied = config.clone();
    proxied.endpoint = Some(counter.endpoint.clone());
    let (base, _state, _dir) = serve_s3(&proxied, SECRET).await;
    let http = reqwest::Client::new();

    let created: Value = http
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": "costs", "seed": "demo"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("id").to_string();
    let key = created["api_key"].as_str().expect("key").to_string();
    let user = created["basic"]["username"]
        .as_str()
        .expect("user")
        .to_string();
    let pass = created["basic"]["password"]
        .as_str()
        .expect("pass")
        .to_string();
    let bearer = format!("Bearer {}", issue_token(&base, &id).await);
    let bill_batches = format!("{base}/billing/2/bill-batches");
    let bill_batch = json!({
        "bill_batch_type": "adhoc", "name": "costs", "description": "counted",
        "invoice_date": "2026-12-01", "invoice_due_date": "2026-12-31T00:00:00Z",
        "auto_approve": true, "use_payment_term": true});

    // First use of each credential in this process (warms the known-tenant cache).
    for (h, v) in [
        ("X-Api-Key", key.as_str()),
        ("Authorization", bearer.as_str()),
    ] {
        let r = http
            .get(&bill_batches)
            .header(h, v)
            .send()
            .await
            .expect("warm");
        assert_eq!(r.status(), 200);
    }
    let r = http
        .get(format!("{base}/t/s/r/1.28/users/current"))
        .basic_auth(&user, Some(&pass))
        .send()
        .await
        .expect("warm");
    assert_eq!(r.status(), 200);

    println!("S3 requests per call (counted at the S3 server):");
    let reads = [
        Call {
            name: "read, Surface B, X-Api-Key",
            request: http.get(&bill_batches).header("X-Api-Key", &key),
            status: 200,
        },
        Call {
            name: "read, Surface B, bearer token",
            request: http.get(&bill_batches).header("Authorization", &bearer),
            status: 200,
        },
        Call {
            name: "read, Surface C, X-Api-Key",
            request: http
                .get(format!("{base}/revenue/3/collectors?page_size=2"))
                .header("X-Api-Key", &key),
            status: 200,
        },
        Call {
            name: "read, Surface A, HTTP Basic",
            request: http
                .get(format!("{base}/t/s/r/1.28/billingAccounts/1"))
                .basic_auth(&user, Some(&pass)),
            status: 200,
        },
    ];
    let mut failures = Vec::new();
    for call in reads {
        let name = call.name;
        let c = measure(&counter, call).await;
        if c.list != 0 || c.get + c.head != 1 || c.put != 0 {
            failures.push(format!(
                "{name}: {c} (target: 1 GET-class request, no LIST)"
            ));
        }
    }
    let write = Call {
        name: "write, Surface B, X-Api-Key",
        request: http
            .post(&bill_batches)
            .header("X-Api-Key", &key)
            .json(&bill_batch),
        status: 200,
    };
    let c = measure(&counter, write).await;
    if c.list != 0 || c.get + c.head != 0 || c.put != 1 {
        failures.push(format!("write: {c} (target: 1 PUT, nothing else)"));
    }
    let unknown = Call {
        name: "unknown API key (401)",
        request: http.get(&bill_batches).header("X-Api-Key", "sbx_unknown"),
        status: 401,
    };
    let c = measure(&counter, unknown).await;
    if c.list != 0 || c.get + c.head > 1 {
        failures.push(format!(
            "unknown credentials: {c} (target: at most 1 GET-class request)"
        ));
    }

    // A cold start: a second server on the same bucket, first request of the tenant.
    let (cold_base, _cold_state, _cold_dir) = serve_s3(&proxied, SECRET).await;
    let cold = Call {
        name: "first read in a new process (cold start)",
        request: http
            .get(format!("{cold_base}/billing/2/bill-batches"))
            .header("X-Api-Key", &key),
        status: 200,
    };
    measure(&counter, cold).await;

    // The second server writes once; the first one's next read applies that entry.
    let elsewhere = Call {
        name: "write in the second process",
        request: http
            .post(format!("{cold_base}/billing/2/bill-batches"))
            .header("X-Api-Key", &key)
            .json(&bill_batch),
        status: 200,
    };
    measure(&counter, elsewhere).await;
    let behind = Call {
        name: "read after another process wrote once",
        request: http.get(&bill_batches).header("X-Api-Key", &key),
        status: 200,
    };
    let c = measure(&counter, behind).await;
    if c.list != 0 || c.get + c.head > 2 {
        failures.push(format!(
            "read after one write elsewhere: {c} (target: the entry's GET and the 404 after it)"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A write at the store, nobody else writing, is one conditional PUT and nothing else: the
/// PUT of the next log slot is the freshness check (docs/storage.md, "Why the PUT is the
/// freshness check"). Before, each write sent a GET of that slot first.
#[test]
fn an_uncontended_write_is_one_put() {
    let moto = Moto::start();
    let config = moto.bucket("one-put");
    let counter = Counter::start(&moto);
    let mut proxied = config.clone();
    proxied.endpoint = Some(counter.endpoint.clone());
    let (store, _dir) = open_store(&proxied);
    let (tenant, _) = store
        .registry()
        .create_tenant("one-put", "UTC")
        .expect("tenant");
    // The first write also cold-starts the tenant in this store.
    try_insert_reason(&store, &tenant.id, "first").expect("write");
    counter.take();
    for name in ["second", "third"] {
        try_insert_reason(&store, &tenant.id, name).expect("write");
        let c = counter.take_counts();
        println!("write at the store, nobody else writing: {c}");
        assert_eq!((c.put, c.get + c.head + c.list), (1, 0), "{name}: {c}");
    }
}
