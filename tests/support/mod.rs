//! Test support, the one helper library of every test binary (`e2e`): a real sandbox server
//! on a loopback port with its own data directory, tenants created through the admin API, and
//! one client module per surface (`legacy` XML, `billing` JSON, `revenue` JSON), `openapi`
//! (the shipped OpenAPI documents and a schemathesis runner); `s3` runs moto and fault
//! proxies for the store tests; `lambda_runtime` emulates the Lambda Runtime API for the
//! Lambda binaries.

pub mod billing;
pub mod legacy;
pub mod open_race;
pub mod openapi;
pub mod revenue;
pub mod xsd;

use base64::Engine;
use serde_json::{json, Value};
use shared::config::Config;
use shared::web::AppState;

/// The admin key every test server uses.
pub const ADMIN_KEY: &str = "test-admin-key";
/// The clock reading at which the demo data set reads as the absolute dates tests assert
/// (`shared::fixtures::DEMO_REFERENCE`).
pub const DEMO_REFERENCE: &str = shared::fixtures::DEMO_REFERENCE;

/// A sandbox served on 127.0.0.1 with a temporary data directory.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client without default headers.
    pub client: reqwest::Client,
    /// The state the server runs on (for store-level assertions).
    pub state: AppState,
    _dir: tempfile::TempDir,
}

/// Credentials of a tenant created through the admin API.
#[derive(Debug, Clone)]
pub struct TestTenant {
    /// Tenant id.
    pub id: String,
    /// Tenant name.
    pub name: String,
    /// X-Api-Key value.
    pub api_key: String,
    /// Basic username.
    pub username: String,
    /// Basic password.
    pub password: String,
}

impl TestTenant {
    /// The `Authorization: Basic ...` value of this tenant.
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// A temporary directory in memory (`/dev/shm`) when the machine has one with at least
/// [`RAM_DIR_ROOM`] free, else in the default temp dir. For a test whose rule is about time
/// spent in the writer, not about the disk: on a shared disk, another process's flushes can
/// stall a sync of SQLite's for hundreds of milliseconds (measured: a clock advance's undo image,
/// synced as it is written, took over 500 ms with four `dd ... conv=fsync` loops beside it,
/// 35 ms without), which is no part of such a rule. The simulation's scratch files go there
/// for the same reason.
pub fn ram_tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let room = rustix::fs::statvfs(shm)
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
        .unwrap_or(0);
    if room >= RAM_DIR_ROOM {
        tempfile::tempdir_in(shm).expect("temp dir in /dev/shm")
    } else {
        tempfile::tempdir().expect("temp dir")
    }
}

/// The room [`ram_tempdir`] wants free in `/dev/shm` (a container's is often 64 MiB, shared by
/// every process in it): a tenant with a thousand billed accounts, its undo image and its
/// WAL take about 15 MB.
pub const RAM_DIR_ROOM: u64 = 256 << 20;

/// Waits (blocking, at most `within`) until a write transaction is open on the SQLite
/// database at `file`: a connection of the test's own cannot take the write lock at once
/// (`BEGIN IMMEDIATE` answers busy); when it can, it gives the lock back at once. The signal
/// that a slow request (`what`) now holds the tenant's writer, so that a request sent next
/// queues behind it, however long the slow one took to get there (a clock advance first
/// writes its undo image, synced to the disk: 35 ms idle, hundreds of milliseconds beside
/// another process's flushes). Fails at once, saying so, when `ended()` answers true before
/// the write was seen: the slow request ended without its write transaction having been
/// seen, so the caller's premise does not hold.
pub fn wait_until_writing(
    file: &std::path::Path,
    within: std::time::Duration,
    what: &str,
    ended: impl Fn() -> bool,
) {
    let conn = rusqlite::Connection::open(file).expect("open the tenant's file");
    conn.busy_timeout(std::time::Duration::ZERO)
        .expect("no busy wait");
    let deadline = std::time::Instant::now() + within;
    loop {
        match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => return,
            Err(e) => panic!("probing the write lock: {e}"),
            Ok(()) => {}
        }
        assert!(
            !ended(),
            "{what} ended before its write transaction was seen on {}",
            file.display()
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no write transaction of {what} opened on {} within {within:?}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Serves the whole sandbox (`sandbox::app`) over `state` on an ephemeral loopback port, in
/// the background; answers its base URL.
pub async fn listen(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let limits = sandbox::server::Limits::of(&state.config);
    let app = sandbox::app(state);
    tokio::spawn(sandbox::server::serve(
        listener,
        app,
        limits,
        std::future::pending(),
    ));
    base
}

impl TestServer {
    /// Starts a server on an ephemeral port.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let state =
            AppState::new(Config::new(dir.path(), Some(ADMIN_KEY.to_string()))).expect("state");
        let base = listen(state.clone()).await;
        TestServer {
            base,
            client: reqwest::Client::new(),
            state,
            _dir: dir,
        }
    }

    /// A server already listening at `base` over `state`, keeping its data directory.
    pub fn from_parts(base: String, state: AppState, dir: tempfile::TempDir) -> TestServer {
        TestServer {
            base,
            client: reqwest::Client::new(),
            state,
            _dir: dir,
        }
    }

    /// Absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Creates a tenant through the admin API (`seed`: demo or empty), in America/Chicago.
    pub async fn create_tenant(&self, name: &str, seed: &str) -> TestTenant {
        self.create_tenant_in(name, seed, "America/Chicago").await
    }

    /// [`TestServer::create_tenant`] in the IANA zone `time_zone`. The demo's dates are
    /// relative to the tenant's clock: they are resolved at the demo's reference instant
    /// ([`DEMO_REFERENCE`], where they read as the absolute dates the tests assert), then the
    /// clock returns to real time.
    pub async fn create_tenant_in(&self, name: &str, seed: &str, time_zone: &str) -> TestTenant {
        let body = json!({"name": name, "seed": seed, "time_zone": time_zone,
            "clock": {"frozen_at": DEMO_REFERENCE}});
        let tenant = self.create_tenant_with(body).await;
        let body = json!({"mode": "real"});
        self.clock_call(&tenant, reqwest::Method::PUT, "", body)
            .await;
        tenant
    }

    /// Creates a tenant from the body of `POST /sandbox/v1/tenants` as given, asserting 201.
    pub async fn create_tenant_with(&self, body: Value) -> TestTenant {
        let r = self
            .client
            .post(self.url("/sandbox/v1/tenants"))
            .header("X-Admin-Key", ADMIN_KEY)
            .json(&body)
            .send()
            .await
            .expect("create tenant");
        let status = r.status();
        let v: Value = r.json().await.expect("json");
        assert_eq!(status, 201, "tenant creation: {v}");
        TestTenant {
            id: v["id"].as_str().expect("id").to_string(),
            name: v["name"].as_str().expect("name").to_string(),
            api_key: v["api_key"].as_str().expect("api_key").to_string(),
            username: v["basic"]["username"]
                .as_str()
                .expect("username")
                .to_string(),
            password: v["basic"]["password"]
                .as_str()
                .expect("password")
                .to_string(),
        }
    }

    /// Issues a bearer token for a tenant through the admin API.
    pub async fn token(&self, tenant: &TestTenant, ttl_seconds: i64) -> String {
        let r = self
            .client
            .post(self.url(&format!("/sandbox/v1/tenants/{}/tokens", tenant.id)))
            .header("X-Admin-Key", ADMIN_KEY)
            .json(&json!({ "ttl_seconds": ttl_seconds }))
            .send()
            .await
            .expect("token");
        assert_eq!(r.status(), 201);
        let v: Value = r.json().await.expect("json");
        v["access_token"].as_str().expect("token").to_string()
    }

    /// GET with `X-Api-Key`.
    pub async fn get_with_key(&self, path: &str, key: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .header("X-Api-Key", key)
            .send()
            .await
            .expect("request")
    }

    /// GET with `tenant`'s HTTP Basic credentials (Surface A).
    pub async fn get_with_basic(&self, path: &str, tenant: &TestTenant) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .header("Authorization", tenant.basic_header())
            .send()
            .await
            .expect("request")
    }

    /// Sends `method path` with the admin key and an optional JSON body.
    pub async fn admin_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::Response {
        let mut req = self.admin(method, path);
        if let Some(body) = body {
            req = req.json(body);
        }
        req.send().await.expect("admin request")
    }

    /// Sends every refusal of `cases` with the admin key and checks its status, its
    /// `{code, message}` shape, the code that goes with the status and its message; a failure
    /// names the case.
    pub async fn assert_admin_refused(&self, cases: &[Refusal<'_>]) {
        for (method, path, body, status, needle) in cases {
            let r = self.admin_call(method.clone(), path, body.as_ref()).await;
            let case = format!("{method} {path} {}", body.clone().unwrap_or_default());
            let (got, code, message) = error_body(r).await;
            check_refusal(&case, (got, &code, &message), *status, needle);
        }
    }

    /// GET with `Authorization: Bearer <token>`.
    pub async fn get_with_bearer(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request")
    }

    /// Freezes the tenant's test clock at its current reading (`PUT .../clock`), so that
    /// every later stamp of its data moves only through [`TestServer::advance_clock`].
    pub async fn freeze_clock(&self, tenant: &TestTenant) {
        let body = json!({"mode": "frozen"});
        self.clock_call(tenant, reqwest::Method::PUT, "", body)
            .await;
    }

    /// Advances the tenant's test clock by `seconds` (`POST .../clock/advance`): stamps made
    /// after it are `seconds` later than those made before, without waiting.
    pub async fn advance_clock(&self, tenant: &TestTenant, seconds: i64) {
        let body = json!({ "seconds": seconds });
        self.clock_call(tenant, reqwest::Method::POST, "/advance", body)
            .await;
    }

    /// Sends `method .../clock{suffix}` with `body` for `tenant`, asserting 200.
    async fn clock_call(
        &self,
        tenant: &TestTenant,
        method: reqwest::Method,
        suffix: &str,
        body: Value,
    ) {
        let path = format!("/sandbox/v1/tenants/{}/clock{suffix}", tenant.id);
        let r = self.admin_call(method.clone(), &path, Some(&body)).await;
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert_eq!(status, 200, "{method} {path}: {text}");
    }

    /// A request builder for `method path` with the admin key.
    pub fn admin(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("X-Admin-Key", ADMIN_KEY)
    }
}

/// One request of a table that must be refused: method, path, optional JSON body, the
/// status, and a piece of text the message must contain ("" for any message).
pub type Refusal<'a> = (reqwest::Method, &'a str, Option<Value>, u16, &'a str);

/// The keys of two JSON objects, in order, without repeats (what a before/after comparison
/// of one record walks).
pub fn union_keys(a: &Value, b: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in [a, b] {
        for k in v.as_object().expect("object").keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// The `code` of a `{code, message}` error with `status`: its reason phrase in upper snake
/// case (`404` -> `NOT_FOUND`).
pub fn status_code(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
        .to_uppercase()
        .replace(' ', "_")
}

/// Refusal rows of GETs from `(path, status)` rows.
pub fn get_refusals<'a>(rows: &[(&'a str, u16)]) -> Vec<Refusal<'a>> {
    rows.iter()
        .map(|(path, status)| (reqwest::Method::GET, *path, None, *status, ""))
        .collect()
}

/// Refusal rows of one method and path from `(JSON body, status)` rows.
pub fn body_refusals<'a>(
    method: reqwest::Method,
    path: &'a str,
    rows: Vec<(Value, u16)>,
) -> Vec<Refusal<'a>> {
    rows.into_iter()
        .map(|(body, status)| (method.clone(), path, Some(body), status, ""))
        .collect()
}

/// Reads a `{code, message}` error body and checks its shape.
pub async fn error_body(r: reqwest::Response) -> (u16, String, String) {
    let status = r.status().as_u16();
    let v: Value = r.json().await.expect("error body is JSON");
    let (code, message) = error_fields(&v);
    (status, code, message)
}

/// The code and message of a `{code, message}` error (the JSON surfaces' and the admin
/// API's one error shape), its shape checked: both strings, nothing else.
pub fn error_fields(v: &Value) -> (String, String) {
    let text = |key: &str| {
        v[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} is a string: {v}"))
            .to_string()
    };
    let (code, message) = (text("code"), text("message"));
    assert_eq!(
        v.as_object().map(|o| o.len()),
        Some(2),
        "only code and message: {v}"
    );
    (code, message)
}

/// Checks one answered row of a [`Refusal`] table: the status, the code that goes with it
/// (`404` -> `NOT_FOUND`) and a message containing `needle`; a failure names `case`. The
/// one check every JSON surface's refusal table runs.
pub fn check_refusal(case: &str, got: (u16, &str, &str), status: u16, needle: &str) {
    let (got_status, code, message) = got;
    assert_eq!(got_status, status, "{case}: {message}");
    assert_eq!(code, status_code(status), "{case}: {message}");
    assert!(message.contains(needle), "{case}: {message}");
}

pub mod lambda_runtime;
pub mod s3;

/// The first JSON block of docs/fixtures.md: the documented fixture example, which tests load.
pub fn fixtures_docs_example() -> Value {
    let md = include_str!("../../docs/fixtures.md");
    let start = md.find("```json\n").expect("a json block") + "```json\n".len();
    let end = start + md[start..].find("```").expect("its end");
    serde_json::from_str(&md[start..end]).expect("the example is JSON")
}
pub mod s3_count;

/// Fails the calling test, naming the one set-up command, unless `present` says the test
/// tool `what` is installed. Installing is `tests/setup.sh`'s job (run by `make test`, the
/// README's test command), never a test's: a test that installed would race its siblings
/// and hide a missing step of the set-up.
///
/// A tool found present is not asked again in this process: the check of moto's server
/// starts a Python interpreter (about 0.8 s of CPU), and the store binary starts some sixty
/// moto servers, one test after another.
pub fn require_tool(what: &str, present: impl Fn() -> bool) {
    static FOUND: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|t| t == what)
    {
        return;
    }
    assert!(
        present(),
        "{what} is not installed: run `make test` (or `bash tests/setup.sh` once, then cargo \
         test); tests/setup.sh installs every test tool"
    );
    FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(what.to_string());
}

/// Waits (at most 30 s) until the fault rule `rule` of tenant `tenant` on the server at
/// `base` is spent (`remaining` 0), read through the admin API: the signal that the requests
/// it matched are past admission and the idempotency claim, inside their latency.
pub async fn wait_rule_spent(client: &reqwest::Client, base: &str, tenant: &str, rule: &str) {
    let path = format!("{base}/sandbox/v1/tenants/{tenant}/faults");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let rules: Value = client
            .get(&path)
            .header("X-Admin-Key", ADMIN_KEY)
            .send()
            .await
            .expect("rules")
            .json()
            .await
            .expect("rules");
        let found = rules
            .as_array()
            .and_then(|rules| rules.iter().find(|r| r["id"] == rule))
            .unwrap_or_else(|| panic!("rule {rule} is listed: {rules}"));
        if found["remaining"] == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "fault rule {rule} was not spent within 30 s: {found}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Whether `program args...` runs and exits 0.
pub fn runs(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
