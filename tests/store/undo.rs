//! Undoing clock advances in S3 mode, across environments on one bucket in moto: an advance
//! made in one environment is undone from another, and every environment (a cold one too)
//! then serves the data and the clock of the moment before it; ids are never given out
//! again; the automatic checkpoints are objects under the tenant's `undo/` (at most three,
//! none left once used, none among the checkpoints); with none left, 409.

use super::checkpoints::{Api, RELATIONS, SECRET};
use e2e::s3::Moto;
use e2e::DEMO_REFERENCE;
use reqwest::Method;
use serde_json::{json, Value};

/// The undo tests' calls, beside the checkpoint tests' own.
impl Api {
    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.admin(method.clone(), path, body).await;
        assert_eq!(status, 200, "{method} {path}: {v}");
        v
    }

    async fn advance(&self, id: &str, body: Value) -> Value {
        let path = format!("/tenants/{id}/clock/advance");
        self.ok(Method::POST, &path, Some(body)).await
    }

    async fn undo(&self, id: &str) -> (u16, Value) {
        let path = format!("/tenants/{id}/clock/undo");
        self.admin(Method::POST, &path, None).await
    }

    async fn now(&self, id: &str) -> String {
        let v = self
            .ok(Method::GET, &format!("/tenants/{id}/clock"), None)
            .await;
        v["now"].as_str().expect("now").to_string()
    }

    async fn export(&self, id: &str) -> Value {
        self.ok(Method::GET, &format!("/tenants/{id}/fixtures"), None)
            .await
    }

    /// The ids of the relations.
    async fn relation_ids(&self, key: &str) -> Vec<i64> {
        let r = self
            .client
            .get(format!("{}{RELATIONS}", self.base))
            .header("X-Api-Key", key)
            .send()
            .await
            .expect("list");
        let v: Value = r.json().await.expect("json");
        v.as_array()
            .expect("a list")
            .iter()
            .filter_map(|r| r["id"].as_str()?.parse().ok())
            .collect()
    }

    /// A demo tenant in Chicago, its clock frozen at 2026-11-20 06:00 there; answers its
    /// id and API key.
    async fn frozen_demo(&self, name: &str) -> (String, String) {
        let body = json!({"name": name, "seed": "demo", "time_zone": "America/Chicago",
            "clock": {"frozen_at": DEMO_REFERENCE}});
        let (status, v) = self.admin(Method::POST, "/tenants", Some(body)).await;
        assert_eq!(status, 201, "{v}");
        let id = v["id"].as_str().expect("id").to_string();
        let frozen = json!({"frozen_at": "2026-11-20T12:00:00Z"});
        self.ok(Method::PUT, &format!("/tenants/{id}/clock"), Some(frozen))
            .await;
        (id, v["api_key"].as_str().expect("key").to_string())
    }
}

#[tokio::test]
async fn an_advance_made_in_one_s3_environment_is_undone_from_another() {
    let moto = Moto::start();
    let s3 = moto.bucket("undo");
    let (a_base, _a, _a_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let (b_base, _b, _b_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let (a, b) = (Api::new(&a_base), Api::new(&b_base));
    let (id, key) = a.frozen_demo("undo-s3").await;
    let keys = |under: &str| moto.keys("undo", &format!("sandbox/tenants/{id}/{under}"));

    a.advance(&id, json!({"to": "2026-11-23"})).await;
    let r1 = b.add_relation(&key, "UNDO_1").await;
    let after_first = b.export(&id).await;
    let second = b.advance(&id, json!({"to": "2026-12-02"})).await;
    assert!(!second["transitions"].as_array().expect("list").is_empty());
    let r2 = a.add_relation(&key, "UNDO_2").await;
    assert_eq!(
        keys("undo/").len(),
        2,
        "one automatic checkpoint per advance"
    );
    assert!(
        keys("checkpoints/").is_empty(),
        "{:?}",
        keys("checkpoints/")
    );

    // Advance twice, undo once (from the environment that did not make the second advance):
    // every environment serves the data and the clock of after the first advance.
    let (status, v) = a.undo(&id).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["now"], "2026-11-23T00:00:00-06:00", "{v}");
    assert_eq!(v["undo_left"], 1, "{v}");
    for env in [&a, &b] {
        assert_eq!(env.now(&id).await, "2026-11-23T00:00:00-06:00");
        assert_eq!(env.export(&id).await, after_first);
        let ids = env.relation_ids(&key).await;
        assert!(ids.contains(&r1) && !ids.contains(&r2), "{ids:?}");
    }
    assert_eq!(keys("undo/").len(), 1, "the image used is deleted");
    // A cold environment starts from the undone state and gives out new ids only.
    let (c_base, _c, _c_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let c = Api::new(&c_base);
    assert_eq!(c.export(&id).await, after_first);
    let fresh = c.add_relation(&key, "UNDO_3").await;
    assert!(
        fresh > r2,
        "id {fresh} after the undo; {r2} was given out before it"
    );
    let warm = b.add_relation(&key, "UNDO_4").await;
    assert!(warm > fresh, "{warm} vs {fresh}");

    let (status, v) = b.undo(&id).await;
    assert_eq!(
        (status, v["now"].as_str()),
        (200, Some("2026-11-20T06:00:00-06:00")),
        "{v}"
    );
    let (status, v) = c.undo(&id).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    assert!(keys("undo/").is_empty(), "{:?}", keys("undo/"));
    assert!(!a.relation_ids(&key).await.contains(&r1));
}

#[tokio::test]
async fn s3_mode_keeps_three_automatic_checkpoints_then_answers_409() {
    let moto = Moto::start();
    let s3 = moto.bucket("undo-kept");
    let (a_base, _a, _a_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let a = Api::new(&a_base);
    let (id, _) = a.frozen_demo("undo-kept").await;
    for _ in 0..4 {
        a.advance(&id, json!({"seconds": 3600})).await;
    }
    let images = moto.keys("undo-kept", &format!("sandbox/tenants/{id}/undo/"));
    assert_eq!(images.len(), 3, "{images:?}");
    for left in [2, 1, 0] {
        let (status, v) = a.undo(&id).await;
        assert_eq!((status, v["undo_left"].as_i64()), (200, Some(left)), "{v}");
    }
    let (status, v) = a.undo(&id).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("CONFLICT")), "{v}");
    assert_eq!(a.now(&id).await, "2026-11-20T07:00:00-06:00");
}
