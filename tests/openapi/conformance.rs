//! schemathesis (pinned in tests/requirements.txt, installed when missing) against the real
//! router on loopback, over every operation of the three documents: no 5xx, statuses,
//! content types, headers and bodies as documented. Surfaces B and C run with a fresh demo
//! tenant's API key; the admin API last (its fuzzing deletes tenants it learns of).
//! Each run records its traffic, and openapi-core (a second validator) checks every recorded
//! response and every request schemathesis drew as valid against the document.
//! `OPENAPI_FUZZ_EXAMPLES` (default 25) bounds the cases per operation and phase,
//! `OPENAPI_FUZZ_SEED` picks the seed.

use e2e::openapi::{check_traffic, schemathesis, DOCUMENTS};
use e2e::{TestServer, ADMIN_KEY};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_conform_to_their_openapi_documents() {
    let s = TestServer::start().await;
    let tenant = s.create_tenant("schemathesis", "demo").await;
    let examples: u32 = std::env::var("OPENAPI_FUZZ_EXAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let key = format!("X-Api-Key: {}", tenant.api_key);
    let admin = format!("X-Admin-Key: {ADMIN_KEY}");
    let mut failures = Vec::new();
    // openapi-core's check of one document's traffic runs while schemathesis tests the next.
    let mut traffic_checks = Vec::new();
    for (doc, header) in DOCUMENTS.iter().zip([&key, &key, &admin]) {
        let base = s.base.clone();
        let headers = vec![header.clone()];
        let started = std::time::Instant::now();
        let report =
            tokio::task::spawn_blocking(move || schemathesis(&base, doc, &headers, examples))
                .await
                .expect("schemathesis task");
        println!(
            "schemathesis {}: {} operations, {} test cases, {:.1} s, {}",
            doc.file,
            report.operations,
            report.cases,
            started.elapsed().as_secs_f64(),
            if report.passed { "passed" } else { "FAILED" }
        );
        assert!(
            report.operations > 0 && report.cases > 0,
            "{}",
            report.output
        );
        if !report.passed {
            failures.push(format!("==== {} ====\n{}", doc.file, report.output));
        }
        traffic_checks.push(tokio::task::spawn_blocking(move || {
            (doc.file, check_traffic(doc, &report))
        }));
    }
    for check in traffic_checks {
        let (file, traffic) = check.await.expect("openapi-core task");
        println!(
            "openapi-core {file}: {}",
            traffic.output.lines().next().unwrap_or("(no output)")
        );
        if !traffic.passed {
            failures.push(format!(
                "==== {file} (openapi-core) ====\n{}",
                traffic.output
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
