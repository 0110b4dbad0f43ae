//! The checkpoint count and forks under concurrency, over HTTP: six concurrent checkpoint
//! creations one below the cap keep at most the cap (before: all six succeeded, 105 kept at
//! 100), on the local server at the documented cap of 100 and across two S3 environments on
//! one bucket at a cap of 10 (the same race, without 90 more checkpoints written to S3
//! first); and a refused fork (name taken,
//! tenant cap) leaves no object in the bucket (before: a tombstone per attempt under the id
//! of a tenant that never existed).

use super::checkpoints::SECRET;
use e2e::s3::Moto;
use e2e::ADMIN_KEY;
use serde_json::{json, Value};

/// The documented cap (`checkpoints::MAX_CHECKPOINTS`), raced on the local server.
const CAP: usize = shared::store::checkpoints::MAX_CHECKPOINTS;
/// The cap the S3 environments are set to ([`shared::store::Store::set_max_checkpoints`]).
const S3_CAP: usize = 10;

/// An admin API call to the server at `base`: status and JSON body (Null when none).
pub(crate) async fn admin(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let r = reqwest::Client::new()
        .request(method, format!("{base}/sandbox/v1{path}"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&body)
        .send()
        .await
        .expect("admin request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Creates tenant `name` on `base`; answers its id.
async fn tenant(base: &str, name: &str) -> String {
    let (status, t) = admin(
        base,
        reqwest::Method::POST,
        "/tenants",
        json!({"name": name, "seed": "demo"}),
    )
    .await;
    assert_eq!(status, 201, "{t}");
    t["id"].as_str().expect("id").to_string()
}

async fn checkpoint(base: &str, id: &str, name: &str) -> (u16, Value) {
    admin(
        base,
        reqwest::Method::POST,
        &format!("/tenants/{id}/checkpoints"),
        json!({ "name": name }),
    )
    .await
}

/// Fills tenant `id` to `cap - 1` checkpoints through `bases[0]`, then sends six creations
/// at once, spread over `bases`: at most one may succeed, and at most `cap` are kept.
async fn six_creations_below_the_cap(bases: &[String], id: &str, cap: usize) {
    for i in 0..cap - 1 {
        let (status, body) = checkpoint(&bases[0], id, &format!("cp{i}")).await;
        assert_eq!(status, 201, "{body}");
    }
    let racing: Vec<_> = (0..6)
        .map(|i| {
            let (base, id) = (bases[i % bases.len()].clone(), id.to_string());
            tokio::spawn(async move { checkpoint(&base, &id, &format!("race{i}")).await })
        })
        .collect();
    let mut created = 0;
    for r in racing {
        let (status, body) = r.await.expect("join");
        match status {
            201 => created += 1,
            409 => assert!(
                body["message"].as_str().unwrap_or("").contains("most"),
                "{body}"
            ),
            _ => panic!("{status} {body}"),
        }
    }
    for base in bases {
        let (status, list) = admin(
            base,
            reqwest::Method::GET,
            &format!("/tenants/{id}/checkpoints"),
            Value::Null,
        )
        .await;
        assert_eq!(status, 200);
        let kept = list.as_array().expect("list").len();
        assert!(
            kept <= cap,
            "{kept} checkpoints kept, {created} of 6 created"
        );
        assert_eq!(kept, cap - 1 + created, "every 201 is kept");
    }
    assert!(created <= 1, "{created} of 6 created at {}", cap - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_concurrent_checkpoints_at_99_keep_at_most_100_locally() {
    let s = e2e::TestServer::start().await;
    let id = tenant(&s.base, "full").await;
    six_creations_below_the_cap(std::slice::from_ref(&s.base), &id, CAP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_concurrent_checkpoints_below_the_cap_keep_at_most_the_cap_across_s3_environments() {
    let moto = Moto::start();
    let s3 = moto.bucket("cpcount");
    let (a, a_state, _ad) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let (b, b_state, _bd) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    for state in [&a_state, &b_state] {
        state.store.set_max_checkpoints(S3_CAP);
    }
    let id = tenant(&a, "full").await;
    six_creations_below_the_cap(&[a, b], &id, S3_CAP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fork_leaves_no_object_in_the_bucket() {
    let moto = Moto::start();
    let s3 = moto.bucket("forkleft");
    let (base, state, _dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let id = tenant(&base, "golden").await;
    tenant(&base, "other").await;
    let (status, cp) = checkpoint(&base, &id, "cp").await;
    assert_eq!(status, 201, "{cp}");
    let fork = |name: &'static str| {
        let (base, id) = (base.clone(), id.clone());
        async move {
            let from = json!({"tenant": id, "checkpoint": "cp"});
            admin(
                &base,
                reqwest::Method::POST,
                "/tenants",
                json!({"name": name, "from": from}),
            )
            .await
        }
    };
    let before = moto.keys("forkleft", "sandbox/");
    // Name taken, three times.
    for _ in 0..3 {
        let (status, body) = fork("other").await;
        assert_eq!(status, 409, "{body}");
    }
    assert_eq!(moto.keys("forkleft", "sandbox/"), before, "name taken");
    // The tenant cap reached.
    state.store.registry().set_max_tenants(2);
    let (status, body) = fork("third").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(moto.keys("forkleft", "sandbox/"), before, "tenant cap");
    // A fork that is accepted still works, and is the only thing added.
    state.store.registry().set_max_tenants(10);
    let (status, body) = fork("third").await;
    assert_eq!(status, 201, "{body}");
    let fork_id = body["id"].as_str().expect("id");
    let after = moto.keys("forkleft", "sandbox/");
    let added: Vec<&String> = after.iter().filter(|k| !before.contains(k)).collect();
    assert!(
        added
            .iter()
            .all(|k| k.contains(fork_id) || k.contains("/registry/")),
        "{added:?}"
    );
}
