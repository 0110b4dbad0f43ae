//! The S3 store never answers a permanent 500, and a deleted tenant stops everywhere: an
//! entry written by a newer schema version is a 503 in the surface's shape naming both
//! versions; an unreadable entry is a 503; deleting a tenant tombstones it first, so another
//! environment that knows it stops serving and appending at its next freshness check, then
//! removes its objects (exports included). Also: the token signing secret comes from the
//! configuration, never from the bucket.

use e2e::s3::Moto;
use e2e::ADMIN_KEY;
use serde_json::{json, Value};
use shared::auth::jwt;
use shared::config::Config;
use shared::store::S3Config;
use shared::web::AppState;

const SECRET: &str = "0123456789abcdef0123456789abcdef-test-secret";

async fn serve(s3: &S3Config, secret: &str) -> (String, AppState, tempfile::TempDir) {
    e2e::s3_count::serve_s3(s3, secret).await
}

pub(crate) async fn create(base: &str, name: &str) -> Value {
    let r = reqwest::Client::new()
        .post(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", ADMIN_KEY)
        .json(&json!({"name": name, "seed": "demo"}))
        .send()
        .await
        .expect("create");
    assert_eq!(r.status(), 201);
    r.json().await.expect("json")
}

async fn get(url: String, key: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .get(url)
        .header("X-Api-Key", key)
        .send()
        .await
        .expect("request");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// Writes an object straight into moto (it checks no signature), as another deployment would.
async fn put_object(moto: &Moto, bucket: &str, key: &str, body: Vec<u8>) {
    let r = reqwest::Client::new()
        .put(format!(
            "{}/{}/{key}",
            moto.endpoint,
            moto.bucket_name(bucket)
        ))
        .body(body)
        .send()
        .await
        .expect("put");
    assert!(r.status().is_success(), "{}", r.status());
}

/// An object's body, read with the store's own S3 client (moto refuses unsigned GETs).
async fn get_object(s3: &S3Config, key: &str) -> String {
    let (s3, key) = (s3.clone(), key.to_string());
    tokio::task::spawn_blocking(move || {
        let bucket = shared::store::s3::Bucket::connect(s3.clone()).expect("client");
        let relative = key
            .strip_prefix(s3.prefix.as_str())
            .expect("under the prefix");
        String::from_utf8(bucket.get(relative).expect("GET")).expect("utf-8")
    })
    .await
    .expect("join")
}

/// The key of the entry after the newest one in a tenant's log.
fn next_log_key(moto: &Moto, bucket: &str, id: &str) -> String {
    let n = moto
        .keys(bucket, &format!("sandbox/tenants/{id}/log/"))
        .len();
    format!("sandbox/tenants/{id}/log/{:020}.json", n + 1)
}

/// The schema version this build migrates tenant databases to.
fn build_schema() -> i64 {
    let mut conn = rusqlite::Connection::open_in_memory().expect("sqlite");
    shared::store::sqlite::configure(&conn).expect("configure");
    shared::store::sqlite::migrate(&mut conn).expect("migrate");
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newer_schema_and_unreadable_entries_are_503_not_500() {
    let moto = Moto::start();
    let s3 = moto.bucket("schema");
    let (base, _state, _dir) = serve(&s3, SECRET).await;
    let newer = create(&base, "newer").await;
    let broken = create(&base, "broken").await;
    let (newer_id, newer_key) = (
        newer["id"].as_str().unwrap(),
        newer["api_key"].as_str().unwrap(),
    );
    let (broken_id, broken_key) = (
        broken["id"].as_str().unwrap(),
        broken["api_key"].as_str().unwrap(),
    );
    let url = format!("{base}/billing/2/bill-batches");
    assert_eq!(get(url.clone(), newer_key).await.0, 200);

    // A newer deployment (one more migration) writes the next entry.
    let mine = build_schema();
    let theirs = mine + 1;
    let entry =
        json!({"format": 1, "attempt": "from-a-newer-deployment", "schema": theirs, "tables": []});
    let key = next_log_key(&moto, "schema", newer_id);
    put_object(&moto, "schema", &key, entry.to_string().into_bytes()).await;
    let (status, body) = get(url.clone(), newer_key).await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).expect("json error shape");
    assert_eq!(body["code"], "SERVICE_UNAVAILABLE");
    let message = body["message"].as_str().expect("message");
    assert!(
        message.contains(&format!("schema version {theirs}"))
            && message.contains(&format!("schema version {mine}")),
        "the message names both versions: {message}"
    );
    // Surface A answers in its own shape.
    let r = reqwest::Client::new()
        .get(format!("{base}/t/s/r/1.28/billingAccounts/1"))
        .basic_auth(
            newer["basic"]["username"].as_str().unwrap(),
            newer["basic"]["password"].as_str(),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 503);
    let xml = r.text().await.expect("body");
    assert!(
        xml.contains("<fault") && xml.contains(&format!("schema version {theirs}")),
        "{xml}"
    );

    // An entry nobody can read.
    let key = next_log_key(&moto, "schema", broken_id);
    put_object(&moto, "schema", &key, b"{not json".to_vec()).await;
    let (status, body) = get(url.clone(), broken_key).await;
    assert_eq!(
        status, 503,
        "an unreadable entry is an outage, not a bug: {body}"
    );
    assert_eq!(
        get(url, broken_key).await.0,
        503,
        "and stays a 503, never a 500"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_tombstones_first_then_removes_every_object() {
    let moto = Moto::start();
    let s3 = moto.bucket("deletion");
    let (a, a_state, a_dir) = serve(&s3, SECRET).await;
    let (b, b_state, _b_dir) = serve(&s3, SECRET).await;
    let t = create(&a, "doomed").await;
    let (id, key) = (
        t["id"].as_str().unwrap().to_string(),
        t["api_key"].as_str().unwrap().to_string(),
    );
    // An export beside the database.
    let store = a_state.store.clone();
    let export_id = id.clone();
    tokio::task::spawn_blocking(move || {
        store.put_tenant_file(&export_id, "analytics/2026-11.csv", b"a,b\n1,2\n")
    })
    .await
    .expect("join")
    .expect("export");
    assert!(!moto
        .keys("deletion", &format!("sandbox/tenants/{id}/analytics/"))
        .is_empty());
    // Environment B knows the tenant (credentials cached, database open).
    let b_read = format!("{b}/billing/2/bill-batches");
    assert_eq!(get(b_read.clone(), &key).await.0, 200);

    let r = reqwest::Client::new()
        .delete(format!("{a}/sandbox/v1/tenants/{id}"))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), 204);

    // B stops serving at its next freshness check: 404 (deleted) then 401, never 200 or 500.
    let (status, body) = get(b_read.clone(), &key).await;
    assert!(matches!(status, 401 | 404), "{status} {body}");
    assert_eq!(get(b_read.clone(), &key).await.0, 401);
    // ... and appends nothing.
    super::powers::uploads_settled(&[&a_state, &b_state]).await;
    let before = moto.keys("deletion", &format!("sandbox/tenants/{id}/"));
    let w = reqwest::Client::new()
        .post(&b_read)
        .header("X-Api-Key", &key)
        .json(&json!({"bill_batch_type": "adhoc", "name": "late", "invoice_date": "2026-12-01",
            "invoice_due_date": "2026-12-31T00:00:00Z", "auto_approve": true, "use_payment_term": true}))
        .send()
        .await
        .expect("write");
    assert_eq!(w.status(), 401);
    // The refused write left nothing running; what else could still write the tenant's
    // objects (either environment's journal uploads of its earlier requests) has run.
    super::powers::uploads_settled(&[&a_state, &b_state]).await;
    let after = moto.keys("deletion", &format!("sandbox/tenants/{id}/"));
    assert_eq!(before, after, "nothing was appended after the deletion");

    // Every object is gone but the log keys, which now hold tombstones only.
    assert!(!after.is_empty());
    for k in &after {
        assert!(k.contains("/log/"), "left behind: {k}");
        let body = get_object(&s3, k).await;
        let entry: Value = serde_json::from_str(&body).expect("entry");
        assert_eq!(entry["tombstone"], true, "{k}: {body}");
        assert_eq!(entry["tables"], json!([]), "{k}: no data left");
    }
    // Locally too: no database file, no export folder, in the deleting environment.
    let leftovers: Vec<_> = walk(a_dir.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&id))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A cold environment does not resurrect it.
    let (c, _c_state, _c_dir) = serve(&s3, SECRET).await;
    assert_eq!(
        get(format!("{c}/billing/2/bill-batches"), &key).await.0,
        401
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_secret_comes_from_configuration_not_the_bucket() {
    let moto = Moto::start();
    let s3 = moto.bucket("secret");
    let (base, _state, dir) = serve(&s3, SECRET).await;
    let t = create(&base, "tokens").await;
    let id = t["id"].as_str().unwrap();
    let token = &e2e::s3_count::issue_token(&base, id).await;
    // Signed with the tenant key derived from the configured secret.
    let key = jwt::tenant_key(SECRET.as_bytes(), id);
    assert!(jwt::verify(token, &key, shared::time::now().timestamp()).is_ok());
    // No secret in the bucket's registry objects, nor a generated one in the data dir.
    for k in moto.keys("secret", "sandbox/registry/") {
        let body = get_object(&s3, &k).await;
        assert!(
            !body.contains("server_secrets") && !body.contains("jwt_master"),
            "{k}: {body}"
        );
    }
    assert!(!dir.path().join(shared::store::TOKEN_SECRET_FILE).exists());
    let bearer = format!("Bearer {token}");
    let call = |base: String| {
        let bearer = bearer.clone();
        async move {
            reqwest::Client::new()
                .get(format!("{base}/billing/2/bill-batches"))
                .header("Authorization", bearer)
                .send()
                .await
                .expect("request")
                .status()
        }
    };
    assert_eq!(call(base.clone()).await, 200);
    // Another environment with the same secret accepts it; after a rotation it is refused.
    let (same, _s, _sd) = serve(&s3, SECRET).await;
    assert_eq!(call(same).await, 200);
    let (rotated, _r, _rd) = serve(&s3, "another-secret-of-at-least-32-characters").await;
    assert_eq!(call(rotated).await, 401);
}

#[tokio::test]
async fn a_local_server_keeps_a_generated_secret_in_its_data_dir() {
    let s = e2e::TestServer::start().await;
    let t = s.create_tenant("local-tokens", "empty").await;
    let token = &e2e::s3_count::issue_token(&s.base, &t.id).await;
    let path = s
        .state
        .store
        .data_dir()
        .join(shared::store::TOKEN_SECRET_FILE);
    let secret = std::fs::read_to_string(&path).expect("secret file");
    assert!(secret.trim().len() >= 32);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(
            mode & 0o077,
            0,
            "only the owner may read the secret: {mode:o}"
        );
    }
    let key = jwt::tenant_key(secret.trim().as_bytes(), &t.id);
    assert!(jwt::verify(token, &key, shared::time::now().timestamp()).is_ok());
    // Deleting a local tenant removes its exports folder too.
    let store = s.state.store.clone();
    let id = t.id.clone();
    tokio::task::spawn_blocking(move || store.put_tenant_file(&id, "analytics/x.csv", b"x"))
        .await
        .expect("join")
        .expect("export");
    let folder = s.state.store.data_dir().join("tenants").join(&t.id);
    assert!(folder.exists());
    let r = s
        .client
        .delete(s.url(&format!("/sandbox/v1/tenants/{}", t.id)))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), 204);
    assert!(!folder.exists(), "the exports folder is removed");
}

#[test]
fn a_token_secret_is_checked_and_generated_once_per_data_dir() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut short = Config::new(dir.path(), None);
    short.token_secret = Some("too short".into());
    let refused = AppState::new(short).err().map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|m| m.contains("SANDBOX_TOKEN_SECRET")),
        "{refused:?}"
    );
    // Servers starting at once on one data dir agree on one generated secret.
    let secrets: Vec<Vec<u8>> = (0..4)
        .map(|_| {
            let path = dir.path().join("shared");
            std::thread::spawn(move || {
                let store = shared::store::Store::open_with(&path, None).expect("store");
                store.local_token_secret().expect("secret")
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("join"))
        .collect();
    assert!(secrets.windows(2).all(|w| w[0] == w[1]), "one secret");
    assert!(secrets[0].len() >= shared::config::MIN_TOKEN_SECRET_LEN);
}
