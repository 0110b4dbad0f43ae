//! Checkpoints, restore and forks over HTTP: on the local server (checkpoint,
//! write, restore: the write is gone; a fork is an independent tenant with its own
//! credentials; refusals in the admin API's shape), and across S3-mode environments on one
//! bucket in moto, one of them its own OS process (`s3_server`): a restore made in one is
//! seen by the next read in the other; a fork made in one is usable from the other; a cold
//! environment starts from the restored state; a fork copies nothing (its first log entry
//! names the checkpoint's file, which it holds): it survives the deletion of the checkpoint
//! and of its source, replays from that file when its snapshots are gone, and the file goes
//! with the last fork that holds it. A checkpoint holds the clock and the fault rules (a
//! restore brings them back, a fork starts with them), not the journal.

use e2e::s3::Moto;
use e2e::{TestServer, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};

pub(crate) const SECRET: &str = "0123456789abcdef0123456789abcdef-test-secret";
/// A resource of Surface B the demo seed fills with 2 rows and a POST adds to.
pub(crate) const RELATIONS: &str = "/billing/2/agreement-services/3/true-up-charge-type-relations";

/// One server's base URL and an HTTP client (the undo tests add their calls to it).
pub(crate) struct Api {
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
}

impl Api {
    pub(crate) fn new(base: &str) -> Api {
        Api {
            base: base.to_string(),
            client: reqwest::Client::new(),
        }
    }

    pub(crate) async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .client
            .request(method, format!("{}/sandbox/v1{path}", self.base))
            .header("X-Admin-Key", ADMIN_KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("admin request");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `POST /tenants/{id}/checkpoints {"name"}`.
    async fn checkpoint(&self, id: &str, name: &str) -> (u16, Value) {
        let path = format!("/tenants/{id}/checkpoints");
        self.admin(Method::POST, &path, Some(json!({ "name": name })))
            .await
    }

    /// `POST /tenants/{id}/restore {"checkpoint"}`.
    async fn restore(&self, id: &str, checkpoint: &str) -> (u16, Value) {
        let path = format!("/tenants/{id}/restore");
        self.admin(
            Method::POST,
            &path,
            Some(json!({ "checkpoint": checkpoint })),
        )
        .await
    }

    /// `POST /tenants {"name", "from": {"tenant", "checkpoint"}}`: a fork.
    async fn fork(&self, name: &str, tenant: &str, checkpoint: &str) -> (u16, Value) {
        let from = json!({"tenant": tenant, "checkpoint": checkpoint});
        self.admin(
            Method::POST,
            "/tenants",
            Some(json!({"name": name, "from": from})),
        )
        .await
    }

    /// Creates a demo tenant; answers its creation body (id, api_key, basic).
    async fn tenant(&self, name: &str) -> Value {
        let (status, body) = self
            .admin(
                Method::POST,
                "/tenants",
                Some(json!({"name": name, "seed": "demo"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body
    }

    /// How many relations the tenant of `key` has (Surface B; one page holds them all).
    async fn relations(&self, key: &str) -> u64 {
        let r = self
            .client
            .get(format!("{}{RELATIONS}", self.base))
            .header("X-Api-Key", key)
            .send()
            .await
            .expect("list");
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.expect("json");
        v.as_array().expect("a list").len() as u64
    }

    /// Adds one relation of `kind` for the tenant of `key`; answers its id.
    pub(crate) async fn add_relation(&self, key: &str, kind: &str) -> i64 {
        let r = self
            .client
            .post(format!("{}{RELATIONS}", self.base))
            .header("X-Api-Key", key)
            .json(&json!({ "true_up_charge_type": kind }))
            .send()
            .await
            .expect("post");
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 201, "{body}");
        body["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("an id in {body}"))
    }

    /// Surface A: `POST path` with an XML body as the tenant's user; answers the new eid.
    async fn xml_create(&self, tenant: &Value, path: &str, body: &str) -> i64 {
        let (user, password) = basic(tenant);
        let r = self
            .client
            .post(format!("{}/t/s/r/1.28/{path}", self.base))
            .basic_auth(user, Some(password))
            .header("Content-Type", "application/xml")
            .body(body.to_string())
            .send()
            .await
            .expect("post");
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert_eq!(status, 201, "{text}");
        let at = text.find(" eid=\"").expect("an eid") + 6;
        text[at..]
            .split('"')
            .next()
            .and_then(|eid| eid.parse().ok())
            .unwrap_or_else(|| panic!("an eid in {text}"))
    }

    /// Surface A: the status of `GET path` as the tenant's user.
    async fn xml_status(&self, tenant: &Value, path: &str) -> u16 {
        let (user, password) = basic(tenant);
        self.client
            .get(format!("{}/t/s/r/1.28/{path}", self.base))
            .basic_auth(user, Some(password))
            .send()
            .await
            .expect("get")
            .status()
            .as_u16()
    }

    /// Status of `GET /users/current` on Surface A with HTTP Basic `user:password`.
    async fn basic_status(&self, user: &str, password: &str) -> u16 {
        self.client
            .get(format!("{}/t/s/r/1.28/users/current", self.base))
            .basic_auth(user, Some(password))
            .send()
            .await
            .expect("basic")
            .status()
            .as_u16()
    }
}

/// A sandbox server in its own OS process (`s3_server`) over an S3 store; killed on drop.
pub(crate) struct Peer {
    pub(crate) base: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Peer {
    pub(crate) fn start(s3: &shared::store::S3Config) -> Peer {
        Peer::start_with(s3, &[])
    }

    /// [`Peer::start`] with more environment variables (`SANDBOX_S3_WRITE_DEADLINE_MS`, ...).
    pub(crate) fn start_with(s3: &shared::store::S3Config, envs: &[(&str, String)]) -> Peer {
        use std::io::BufRead;
        let dir = tempfile::tempdir().expect("dir");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_s3_server"))
            .arg(dir.path())
            .args([ADMIN_KEY, SECRET])
            .env("SANDBOX_S3_BUCKET", &s3.bucket)
            .env("SANDBOX_S3_PREFIX", &s3.prefix)
            .env(
                "SANDBOX_S3_ENDPOINT",
                s3.endpoint.as_deref().unwrap_or_default(),
            )
            .env("RUST_LOG", "warn")
            .envs(e2e::s3::AWS_ENV)
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn s3_server");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("s3_server's first line");
        let base = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("s3_server said {line:?}"))
            .to_string();
        Peer {
            base,
            child,
            _dir: dir,
        }
    }
}

impl Peer {
    /// Kills the process at once (SIGKILL: nothing of it runs after) and waits for it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn key(tenant: &Value) -> String {
    tenant["api_key"].as_str().expect("api_key").to_string()
}

/// A tenant's Surface A user and password, from its creation body.
fn basic(tenant: &Value) -> (String, String) {
    let field = |name: &str| {
        tenant["basic"][name]
            .as_str()
            .expect("basic credentials")
            .to_string()
    };
    (field("username"), field("password"))
}

fn id(tenant: &Value) -> String {
    tenant["id"].as_str().expect("id").to_string()
}

#[tokio::test]
async fn checkpoint_write_restore_and_fork_on_the_local_server() {
    let s = TestServer::start().await;
    let api = Api::new(&s.base);
    let golden = api.tenant("golden").await;
    let (gid, gkey) = (id(&golden), key(&golden));
    assert_eq!(api.relations(&gkey).await, 2);

    let (status, cp) = api.checkpoint(&gid, "seeded").await;
    assert_eq!(status, 201, "{cp}");
    assert_eq!(cp["name"], "seeded");
    let version = cp["version"].as_u64().expect("version");
    assert!(version >= 1, "the seed was a write: {cp}");
    assert!(cp["created_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    let seen = api.add_relation(&gkey, "ONE_TIME").await;
    assert_eq!(api.relations(&gkey).await, 3);
    let (status, restored) = api.restore(&gid, "seeded").await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["checkpoint"]["name"], "seeded");
    assert!(restored["version"].as_u64().expect("version") > version + 1);
    // The write made after the checkpoint is gone; the credentials still open the tenant.
    assert_eq!(api.relations(&gkey).await, 2);
    let user = golden["basic"]["username"].as_str().expect("user");
    let password = golden["basic"]["password"].as_str().expect("password");
    assert_eq!(api.basic_status(user, password).await, 200);
    // The same write can be made again (the restored rows are whole, constraints included),
    // under a new id: the id a client saw before the restore never names another record.
    let again = api.add_relation(&gkey, "ONE_TIME").await;
    assert_eq!(api.relations(&gkey).await, 3);
    assert!(
        again > seen,
        "id {again} after the restore, {seen} seen before it"
    );

    // Listing and reading one.
    let (status, list) = api
        .admin(Method::GET, &format!("/tenants/{gid}/checkpoints"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(list, json!([cp]));
    let (status, one) = api
        .admin(
            Method::GET,
            &format!("/tenants/{gid}/checkpoints/seeded"),
            None,
        )
        .await;
    assert_eq!((status, &one), (200, &cp));

    // A fork: its own tenant, its own credentials, the checkpoint's data, independent.
    let (status, fork) = api.fork("ci-job-1", &gid, "seeded").await;
    assert_eq!(status, 201, "{fork}");
    let (fid, fkey) = (id(&fork), key(&fork));
    assert_ne!(fid, gid);
    assert_ne!(fkey, gkey);
    assert_eq!(fork["from"], json!({"tenant": gid, "checkpoint": "seeded"}));
    assert_eq!(fork["time_zone"], golden["time_zone"]);
    assert_eq!(api.relations(&fkey).await, 2, "the checkpoint's state");
    api.add_relation(&fkey, "ONE_TIME").await;
    api.add_relation(&fkey, "CUSTOM_A").await;
    assert_eq!(api.relations(&fkey).await, 4);
    assert_eq!(api.relations(&gkey).await, 3, "the source is untouched");
    // The source's credentials do not open the fork: its password with the fork's user is
    // refused, and its API key still reads the source's rows.
    let fork_user = fork["basic"]["username"].as_str().expect("user");
    let fork_password = fork["basic"]["password"].as_str().expect("password");
    assert_eq!(fork_user, "ci-job-1");
    assert_eq!(api.basic_status(fork_user, password).await, 401);
    assert_eq!(api.basic_status(fork_user, fork_password).await, 200);
    assert_eq!(api.basic_status(user, fork_password).await, 401);
    // Restoring the source does not touch the fork.
    let (status, _) = api.restore(&gid, "seeded").await;
    assert_eq!(status, 200);
    assert_eq!(api.relations(&gkey).await, 2);
    assert_eq!(api.relations(&fkey).await, 4);

    // Deleting the checkpoint: gone from the list; restoring it is a 404; the fork lives on.
    let (status, _) = api
        .admin(
            Method::DELETE,
            &format!("/tenants/{gid}/checkpoints/seeded"),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (_, list) = api
        .admin(Method::GET, &format!("/tenants/{gid}/checkpoints"), None)
        .await;
    assert_eq!(list, json!([]));
    assert_eq!(api.restore(&gid, "seeded").await.0, 404);
    assert_eq!(api.relations(&fkey).await, 4);
    // Deleting the source keeps the fork.
    let (status, _) = api
        .admin(Method::DELETE, &format!("/tenants/{gid}"), None)
        .await;
    assert_eq!(status, 204);
    assert_eq!(api.relations(&fkey).await, 4);
}

/// docs/sandbox.md: the clock and the fault rules are tenant data, so a checkpoint holds
/// them (a restore brings them back, a fork starts with them); the journal is not (a
/// restore leaves it as it is, a fork starts with none).
#[tokio::test]
async fn a_checkpoint_holds_the_clock_and_the_rules_but_not_the_journal() {
    let s = TestServer::start().await;
    let api = Api::new(&s.base);
    let golden = api.tenant("golden").await;
    let (gid, gkey) = (id(&golden), key(&golden));
    let clock = format!("/tenants/{gid}/clock");
    let frozen = json!({"frozen_at": "2030-01-01T00:00:00Z"});
    let (status, _) = api.admin(Method::PUT, &clock, Some(frozen)).await;
    assert_eq!(status, 200);
    let rule = json!({"method": "GET", "path": "/billing/2/agreements*", "status": 503});
    let (status, rule) = api
        .admin(Method::POST, &format!("/tenants/{gid}/faults"), Some(rule))
        .await;
    assert_eq!(status, 201, "{rule}");
    assert_eq!(api.relations(&gkey).await, 2);
    let (status, cp) = api.checkpoint(&gid, "cp").await;
    assert_eq!(status, 201, "{cp}");

    // After the checkpoint: the clock runs in real time again, the rule is gone.
    let (status, _) = api
        .admin(Method::PUT, &clock, Some(json!({"mode": "real"})))
        .await;
    assert_eq!(status, 200);
    let rule_path = format!("/tenants/{gid}/faults/{}", rule["id"].as_str().expect("id"));
    let (status, _) = api.admin(Method::DELETE, &rule_path, None).await;
    assert_eq!(status, 204);
    let journal = |tenant: &str| format!("/tenants/{tenant}/requests?page_size=100");
    let (_, before) = api.admin(Method::GET, &journal(&gid), None).await;
    let before = before.as_array().expect("entries").clone();
    assert!(before.len() >= 6, "{before:?}");

    let rules_of = |tenant: &str| format!("/tenants/{tenant}/faults");
    let (status, _) = api.restore(&gid, "cp").await;
    assert_eq!(status, 200);
    let (_, now) = api.admin(Method::GET, &clock, None).await;
    assert_eq!(
        (now["mode"].as_str(), now["frozen_at"].as_str()),
        (Some("frozen"), Some("2030-01-01T00:00:00+00:00")),
        "{now}"
    );
    let (_, rules) = api.admin(Method::GET, &rules_of(&gid), None).await;
    assert_eq!(rules, json!([rule]), "the rule of the checkpoint's moment");
    // The journal kept every entry from before the restore (and recorded the restore).
    let (_, after) = api.admin(Method::GET, &journal(&gid), None).await;
    let after = after.as_array().expect("entries").clone();
    for entry in &before {
        assert!(after.contains(entry), "{entry} lost by the restore");
    }
    assert!(after
        .iter()
        .any(|e| e["path"] == json!(format!("/sandbox/v1/tenants/{gid}/restore"))));

    // A fork starts with the clock and the rule, and with an empty journal.
    let (status, fork) = api.fork("job", &gid, "cp").await;
    assert_eq!(status, 201, "{fork}");
    let fid = id(&fork);
    let (status, journal_of_fork) = api.admin(Method::GET, &journal(&fid), None).await;
    assert_eq!((status, journal_of_fork), (200, json!([])));
    let (_, fork_clock) = api
        .admin(Method::GET, &format!("/tenants/{fid}/clock"), None)
        .await;
    assert_eq!(fork_clock["frozen_at"], now["frozen_at"], "{fork_clock}");
    let (_, fork_rules) = api.admin(Method::GET, &rules_of(&fid), None).await;
    assert_eq!(fork_rules.as_array().map(Vec::len), Some(1), "{fork_rules}");
    assert_eq!(fork_rules[0]["path"], rule["path"]);
    let r = api
        .client
        .get(format!("{}/billing/2/agreements", api.base))
        .header("X-Api-Key", key(&fork))
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), 503, "the fork's copy of the rule applies");
}

#[tokio::test]
async fn checkpoint_refusals_in_the_admin_shape() {
    let s = TestServer::start().await;
    let t = s.create_tenant("refusals", "demo").await;
    let other = s.create_tenant("taken", "empty").await;
    let cps = format!("/sandbox/v1/tenants/{}/checkpoints", t.id);
    let r = s
        .admin_call(Method::POST, &cps, Some(&json!({"name": "one"})))
        .await;
    assert_eq!(r.status(), 201);
    let restore = format!("/sandbox/v1/tenants/{}/restore", t.id);
    let long = "x".repeat(65);
    let (two, bad) = (format!("{cps}/two"), format!("{cps}/bad%20name"));
    let from = |tenant: &str, checkpoint: &str| json!({"name": "fork", "from": {"tenant": tenant, "checkpoint": checkpoint}});
    let cases: Vec<e2e::Refusal<'_>> = vec![
        // Unknown tenant or checkpoint.
        (
            Method::POST,
            "/sandbox/v1/tenants/t_nope/checkpoints",
            Some(json!({"name": "a"})),
            404,
            "t_nope",
        ),
        (
            Method::GET,
            "/sandbox/v1/tenants/t_nope/checkpoints",
            None,
            404,
            "t_nope",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants/t_nope/restore",
            Some(json!({"checkpoint": "one"})),
            404,
            "t_nope",
        ),
        (
            Method::POST,
            &restore,
            Some(json!({"checkpoint": "two"})),
            404,
            "'two'",
        ),
        (Method::GET, &two, None, 404, "'two'"),
        (Method::DELETE, &two, None, 404, "'two'"),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(from(&t.id, "two")),
            404,
            "'two'",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(from("t_nope", "one")),
            404,
            "t_nope",
        ),
        // Duplicates.
        (
            Method::POST,
            &cps,
            Some(json!({"name": "one"})),
            409,
            "'one'",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(json!({"name": other.name, "from": {"tenant": t.id, "checkpoint": "one"}})),
            409,
            "taken",
        ),
        // Bad names and bodies.
        (
            Method::POST,
            &cps,
            Some(json!({"name": ""})),
            400,
            "1 to 64",
        ),
        (
            Method::POST,
            &cps,
            Some(json!({"name": long})),
            400,
            "1 to 64",
        ),
        (
            Method::POST,
            &cps,
            Some(json!({"name": "a/b"})),
            400,
            "1 to 64",
        ),
        (
            Method::POST,
            &cps,
            Some(json!({"name": ".hidden"})),
            400,
            "starting with",
        ),
        (Method::POST, &cps, Some(json!({"name": 5})), 400, ""),
        (
            Method::POST,
            &cps,
            Some(json!({"name": "a", "x": 1})),
            400,
            "",
        ),
        (Method::POST, &cps, None, 400, ""),
        (
            Method::POST,
            &restore,
            Some(json!({"checkpoint": "a b"})),
            400,
            "1 to 64",
        ),
        (Method::POST, &restore, Some(json!({})), 400, ""),
        (Method::GET, &bad, None, 400, "1 to 64"),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(
                json!({"name": "f", "seed": "demo", "from": {"tenant": t.id, "checkpoint": "one"}}),
            ),
            400,
            "'seed'",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(json!({"name": "bad name", "from": {"tenant": t.id, "checkpoint": "one"}})),
            400,
            "name must be",
        ),
        (
            Method::POST,
            "/sandbox/v1/tenants",
            Some(json!({"name": "f", "from": {"tenant": t.id}})),
            400,
            "",
        ),
    ];
    s.assert_admin_refused(&cases).await;
    // Without the admin key: 401.
    let r = s.client.get(s.url(&cps)).send().await.expect("request");
    assert_eq!(r.status(), 401);
    // Nothing was created by the refusals.
    let r = s.admin_call(Method::GET, &cps, None).await;
    let list: Value = r.json().await.expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let r = s.admin_call(Method::GET, "/sandbox/v1/tenants", None).await;
    let tenants: Value = r.json().await.expect("json");
    assert_eq!(tenants.as_array().map(Vec::len), Some(2), "{tenants}");
}

/// The body of bucket key `key` (as moto lists it, with the prefix).
async fn object(s3: &shared::store::S3Config, key: &str) -> Vec<u8> {
    let (s3, key) = (s3.clone(), key.to_string());
    tokio::task::spawn_blocking(move || {
        let bucket = shared::store::s3::Bucket::connect(s3).expect("client");
        bucket
            .get(key.strip_prefix("sandbox/").expect("prefix"))
            .expect("get")
    })
    .await
    .expect("join")
}

#[tokio::test]
async fn restores_and_forks_cross_s3_environments() {
    let moto = Moto::start();
    let s3 = moto.bucket("checkpoints");
    let (a_base, _a, _a_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    // B is its own OS process (as a second Lambda environment would be).
    let b_process = Peer::start(&s3);
    let (a, b) = (Api::new(&a_base), Api::new(&b_process.base));
    let golden = a.tenant("golden").await;
    let (gid, gkey) = (id(&golden), key(&golden));
    // B opens the tenant (its cache is warm from here on).
    assert_eq!(b.relations(&gkey).await, 2);

    let (status, cp) = a.checkpoint(&gid, "seeded").await;
    assert_eq!(status, 201, "{cp}");
    let version = cp["version"].as_u64().expect("version");
    let tenant_keys =
        |prefix: &str| moto.keys("checkpoints", &format!("sandbox/tenants/{gid}/{prefix}"));
    assert_eq!(tenant_keys("checkpoints/").len(), 2, "manifest and file");
    // The same name from the other environment: 409.
    let (status, dup) = b.checkpoint(&gid, "seeded").await;
    assert_eq!((status, dup["code"].as_str()), (409, Some("CONFLICT")));
    let (_, listed) = b
        .admin(Method::GET, &format!("/tenants/{gid}/checkpoints"), None)
        .await;
    assert_eq!(listed, json!([cp]), "B lists what A made");

    // B writes twice; A restores; B's next read sees the restored state.
    b.add_relation(&gkey, "ONE_TIME").await;
    let seen = b.add_relation(&gkey, "CUSTOM_A").await;
    assert_eq!(a.relations(&gkey).await, 4);
    let (status, restored) = a.restore(&gid, "seeded").await;
    assert_eq!(status, 200, "{restored}");
    let after = restored["version"].as_u64().expect("version");
    assert_eq!(after, version + 3, "two writes, then the restore entry");
    assert_eq!(
        b.relations(&gkey).await,
        2,
        "B's next read sees the restore"
    );
    assert_eq!(a.relations(&gkey).await, 2);
    // A restore in B made before B saw one made in A: B's catch-up replays A's restore
    // (with its own checkpoint attached), then appends its own. The first id after the
    // restore is above every id seen before it.
    let first = a.add_relation(&gkey, "ONE_TIME").await;
    assert!(
        first > seen,
        "id {first} after the restore, {seen} seen before it"
    );
    let (status, again) = b.restore(&gid, "seeded").await;
    assert_eq!(status, 200, "{again}");
    let after = again["version"].as_u64().expect("version");
    assert_eq!(after, version + 5);
    assert_eq!(a.relations(&gkey).await, 2);
    // History is appended to, never rewritten: each restore is one log entry naming its own
    // copy of the checkpoint; a snapshot of the newest one's version was copied by S3.
    let entry = tenant_keys("log/");
    assert_eq!(entry.len() as u64, after);
    assert_eq!(tenant_keys("restores/").len(), 2);
    assert!(
        tenant_keys("snapshots/")
            .iter()
            .any(|k| k.ends_with(&format!("{after:020}.db"))),
        "{:?}",
        tenant_keys("snapshots/")
    );
    // Writes go on from the restored state, in either environment, with new ids (B
    // replayed both restores, each carrying the writer's id sequences).
    let after_both = b.add_relation(&gkey, "ONE_TIME").await;
    assert!(after_both > first, "{after_both} vs {first}");
    assert_eq!(a.relations(&gkey).await, 3);

    // A cold environment starts from the restore's snapshot (copied from the checkpoint,
    // whose own header names the older version, and whose id sequences are the
    // checkpoint's: the restore entry's raise them) and sees exactly what the others see.
    // B's last write came after the snapshot, so C also replays it: restore again first.
    let (status, third) = a.restore(&gid, "seeded").await;
    assert_eq!(status, 200, "{third}");
    let (c_base, _c, _c_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let c = Api::new(&c_base);
    assert_eq!(c.relations(&gkey).await, 2);
    let cold = c.add_relation(&gkey, "CUSTOM_A").await;
    assert!(
        cold > after_both,
        "a cold environment gave id {cold}, {after_both} was seen"
    );
    c.add_relation(&gkey, "ONE_TIME").await;
    assert_eq!(b.relations(&gkey).await, 4);

    // A fork made in A is usable from B with its own credentials; the source is untouched.
    let (status, fork) = a.fork("ci-job", &gid, "seeded").await;
    assert_eq!(status, 201, "{fork}");
    let (fid, fkey) = (id(&fork), key(&fork));
    assert_eq!(b.relations(&fkey).await, 2);
    b.add_relation(&fkey, "ONE_TIME").await;
    assert_eq!(a.relations(&fkey).await, 3);
    assert_eq!(a.relations(&gkey).await, 4);
    let user = fork["basic"]["username"].as_str().expect("user");
    let password = golden["basic"]["password"].as_str().expect("password");
    assert_eq!(b.basic_status(user, password).await, 401);
    let fork_password = fork["basic"]["password"].as_str().expect("password");
    assert_eq!(b.basic_status(user, fork_password).await, 200);
    // The fork copies nothing: its entry 1 is a restore naming the checkpoint's own file,
    // which the fork holds with a marker beside it.
    let fork_keys =
        |prefix: &str| moto.keys("checkpoints", &format!("sandbox/tenants/{fid}/{prefix}"));
    assert!(fork_keys("snapshots/").is_empty(), "{:?}", fork_keys(""));
    assert!(fork_keys("restores/").is_empty());
    let first = fork_keys("log/");
    assert_eq!(first.len(), 2, "the restore entry and B's write");
    let entry: Value = serde_json::from_slice(&object(&s3, &first[0]).await).expect("json");
    let file = entry["restore"]["object"]
        .as_str()
        .expect("object")
        .to_string();
    assert_eq!(entry["restore"]["owner"], json!(format!("tenants/{gid}")));
    assert!(file.starts_with("checkpoints/files/"), "{entry}");
    let file_key = format!("sandbox/tenants/{gid}/{file}");
    let marker = format!("{file_key}.refs/tenants/{fid}");
    assert!(tenant_keys("checkpoints/files/").contains(&marker));

    // A checkpoint deleted in B: A cannot restore it (404); the restores made from it keep
    // their own copies (the log still names existing objects) and the fork reads on.
    let (status, _) = b
        .admin(
            Method::DELETE,
            &format!("/tenants/{gid}/checkpoints/seeded"),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (status, _) = a.restore(&gid, "seeded").await;
    assert_eq!(status, 404);
    assert_eq!(tenant_keys("restores/").len(), 3);
    assert_eq!(a.relations(&fkey).await, 3);
    let (d_base, _d, _d_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let d = Api::new(&d_base);
    assert_eq!(
        d.relations(&gkey).await,
        4,
        "a new environment, after the deletion"
    );
    assert_eq!(d.relations(&fkey).await, 3);

    // The checkpoint is gone but its file is not: the fork holds it. Deleting the source
    // tenant keeps it too; a cold environment then loads the fork from it.
    assert!(tenant_keys("checkpoints/files/").contains(&file_key));
    let (status, _) = b
        .admin(Method::DELETE, &format!("/tenants/{gid}"), None)
        .await;
    assert_eq!(status, 204);
    assert_eq!(
        tenant_keys("checkpoints/"),
        vec![file_key.clone(), marker.clone()],
        "only the held file and its marker are left of the source"
    );
    let (e_base, _e, _e_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let e = Api::new(&e_base);
    assert_eq!(
        e.relations(&fkey).await,
        3,
        "the fork, cold, after its source's deletion"
    );
    e.add_relation(&fkey, "CUSTOM_A").await;
    assert_eq!(a.relations(&fkey).await, 4);
    // The last holder lets go: deleting the fork deletes the file and its marker.
    let (status, _) = e
        .admin(Method::DELETE, &format!("/tenants/{fid}"), None)
        .await;
    assert_eq!(status, 204);
    assert!(
        tenant_keys("checkpoints/").is_empty(),
        "{:?}",
        tenant_keys("")
    );
}

/// An account (Surface A's eid) and a payment are numbered by tables that were not
/// AUTOINCREMENT before migration 0011: an eid given out before a restore came back after it,
/// and a GET of it read the new account. In S3 mode: written in one environment, restored
/// in another, written again in the first (warm, it replays the restore entry) and in a cold
/// one (it starts from the restore's snapshot and the entry's sequences); and the same for
/// a fork restored to its own checkpoint.
#[tokio::test]
async fn eids_are_not_given_out_again_after_a_restore_in_any_s3_environment() {
    const ACCOUNT: &str = r#"<billingAccount billType="PAPER" automaticRecurringPayment="false"><billingAccountCategory eid="1"/></billingAccount>"#;
    const PAYMENT: &str = r#"<payment amount="2.50" reference="IDS"><billingAccount eid="3"/><checkPayment/></payment>"#;
    let moto = Moto::start();
    let s3 = moto.bucket("eids");
    let (a_base, _a, _a_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let b_process = Peer::start(&s3);
    let (a, b) = (Api::new(&a_base), Api::new(&b_process.base));
    let golden = a.tenant("golden").await;
    let gid = id(&golden);
    let (status, _) = a.checkpoint(&gid, "seeded").await;
    assert_eq!(status, 201);

    // Written in B, restored in A.
    let account = b.xml_create(&golden, "billingAccounts", ACCOUNT).await;
    let payment = b.xml_create(&golden, "payments", PAYMENT).await;
    assert_eq!(
        a.xml_status(&golden, &format!("billingAccounts/{account}"))
            .await,
        200
    );
    let (status, _) = a.restore(&gid, "seeded").await;
    assert_eq!(status, 200);
    // B, warm, replays the restore and numbers after what it gave out before it.
    let warm_account = b.xml_create(&golden, "billingAccounts", ACCOUNT).await;
    let warm_payment = b.xml_create(&golden, "payments", PAYMENT).await;
    assert!(
        warm_account > account,
        "eid {warm_account} after the restore, {account} before"
    );
    assert!(
        warm_payment > payment,
        "eid {warm_payment} after the restore, {payment} before"
    );
    assert_eq!(
        b.xml_status(&golden, &format!("billingAccounts/{account}"))
            .await,
        404
    );
    assert_eq!(
        a.xml_status(&golden, &format!("payments/{payment}")).await,
        404
    );

    // Restored again; a cold environment numbers after everything given out before.
    let (status, _) = a.restore(&gid, "seeded").await;
    assert_eq!(status, 200);
    let (c_base, _c, _c_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let c = Api::new(&c_base);
    let cold_account = c.xml_create(&golden, "billingAccounts", ACCOUNT).await;
    let cold_payment = c.xml_create(&golden, "payments", PAYMENT).await;
    assert!(
        cold_account > warm_account,
        "cold eid {cold_account}, {warm_account} was seen"
    );
    assert!(
        cold_payment > warm_payment,
        "cold eid {cold_payment}, {warm_payment} was seen"
    );
    for (path, gone) in [
        ("billingAccounts", account),
        ("billingAccounts", warm_account),
    ] {
        assert_eq!(c.xml_status(&golden, &format!("{path}/{gone}")).await, 404);
    }

    // A fork restored to its own checkpoint: the same, across environments.
    let (status, fork) = a.fork("ci-job", &gid, "seeded").await;
    assert_eq!(status, 201, "{fork}");
    let fid = id(&fork);
    let (status, _) = b.checkpoint(&fid, "start").await;
    assert_eq!(status, 201);
    let forked = b.xml_create(&fork, "billingAccounts", ACCOUNT).await;
    let (status, _) = a.restore(&fid, "start").await;
    assert_eq!(status, 200);
    let (d_base, _d, _d_dir) = e2e::s3_count::serve_s3(&s3, SECRET).await;
    let d = Api::new(&d_base);
    assert_eq!(
        d.xml_status(&fork, &format!("billingAccounts/{forked}"))
            .await,
        404
    );
    let again = d.xml_create(&fork, "billingAccounts", ACCOUNT).await;
    assert!(
        again > forked,
        "fork eid {again} after its restore, {forked} before"
    );
    assert_eq!(
        b.xml_status(&fork, &format!("billingAccounts/{forked}"))
            .await,
        404
    );
}

#[test]
fn a_fork_replays_from_its_source_file_after_compaction_and_the_source_deletion() {
    let moto = Moto::start();
    let mut config = moto.bucket("fork-base");
    config.compact_every = 2;
    let (a, _a_dir) = e2e::s3::open_store(&config);
    let (golden, _) = a.registry().create_tenant("golden", "UTC").expect("tenant");
    e2e::s3::try_insert_reason(&a, &golden.id, "seeded").expect("write");
    a.create_checkpoint(&golden.id, "cp").expect("checkpoint");
    let (fork, _) = a.fork_tenant(&golden, "cp", "fork").expect("fork");
    for name in ["f-1", "f-2", "f-3"] {
        e2e::s3::try_insert_reason(&a, &fork.id, name).expect("fork write");
    }
    let snapshots = format!("sandbox/tenants/{}/snapshots/", fork.id);
    // Compaction runs in the background after the write that made it due (which claimed it
    // before it returned): once it is over, its snapshot is up and no later one lands.
    e2e::s3::wait_for_compaction(&a, &fork.id, std::time::Duration::from_secs(30));
    let keys = moto.keys("fork-base", &snapshots);
    assert_eq!(keys.len(), 1, "the fork's own snapshot: {keys:?}");
    let expected = vec!["f-1", "f-2", "f-3", "seeded"];
    assert_eq!(e2e::s3::reason_names(&a, &fork.id), expected);
    // A cold start takes the snapshot; without it, the log from entry 1, which names the
    // source's checkpoint file.
    let (b, _b_dir) = e2e::s3::open_store(&config);
    assert_eq!(e2e::s3::reason_names(&b, &fork.id), expected);
    let bucket = shared::store::s3::Bucket::connect(config.clone()).expect("client");
    for key in &keys {
        bucket
            .delete(key.strip_prefix("sandbox/").expect("prefix"))
            .expect("delete");
    }
    let (c, _c_dir) = e2e::s3::open_store(&config);
    assert_eq!(e2e::s3::reason_names(&c, &fork.id), expected);
    assert_eq!(e2e::s3::reason_names(&c, &golden.id), vec!["seeded"]);
    // The source goes (its checkpoint with it); the file the fork names stays, held.
    a.tombstone_tenant(&golden.id).expect("tombstone");
    a.registry().delete(&golden.id).expect("unregister");
    a.drop_tenant_db(&golden.id).expect("erase");
    let held = moto.keys(
        "fork-base",
        &format!("sandbox/tenants/{}/checkpoints/", golden.id),
    );
    assert_eq!(held.len(), 2, "the file and the fork's marker: {held:?}");
    let (d, _d_dir) = e2e::s3::open_store(&config);
    assert_eq!(e2e::s3::reason_names(&d, &fork.id), expected);
    // A fork of the deleted source's checkpoint is refused, and leaves nothing behind.
    assert!(a.fork_tenant(&golden, "cp", "late").is_err());
    assert_eq!(
        moto.keys(
            "fork-base",
            &format!("sandbox/tenants/{}/checkpoints/", golden.id)
        ),
        held
    );
}
