//! End to end through the real Lambda binaries: the five route group functions, built in this
//! test's own target directory and profile with the features of `cargo test --workspace` (so
//! under that command only the bin crates are compiled; `target/<profile>/<name>`), run under
//! the Lambda Runtime API emulator of `e2e::lambda_runtime` with their state in moto's S3;
//! every file of `events/` is sent to its function and each answer is checked against
//! `events/manifest.json`, then the state is looked for in the bucket.

use e2e::lambda_runtime::LambdaRuntime;
use e2e::s3::{Moto, AWS_ENV};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The admin key the sample events carry.
const EVENTS_ADMIN_KEY: &str = "sandbox-admin-key";
const FUNCTIONS: [&str; 5] = ["legacy", "usage", "billing", "revenue", "admin"];
/// How long the build of the function binaries may wait for cargo's build directory lock.
const LOCK_WAIT: Duration = Duration::from_secs(300);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The directory of the binaries of this test's build: the test runs from
/// `target/<profile>/deps/`, cargo puts the workspace's binaries in `target/<profile>/`.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps/")
        .to_path_buf()
}

/// Whether `name` is one of the variables cargo sets for this test process to describe the
/// e2e package. Build scripts declare `rerun-if-env-changed` on some of them (ring's, through
/// cc: `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...), so a cargo started with them would run
/// those scripts again and recompile everything above them, and the next plain build back.
fn describes_this_package(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
            "OUT_DIR",
        ]
        .contains(&name)
}

/// Brings the workspace's binaries in [`bin_dir`] up to date, reusing everything
/// `cargo test --workspace` compiled, and answers that directory.
///
/// `cargo test` builds the binaries of the packages that have integration tests only, and
/// the function packages have none, so they are built here, in the same target directory and
/// profile. `--examples` (the workspace has none) makes cargo resolve features with the
/// dev-dependencies, as `cargo test` does: resolver 2 enables dev-dependency features only
/// when a selected target needs them. Under `cargo test --workspace` every dependency is
/// then already compiled and only the small bin crates are built and linked (a
/// `cargo test -p e2e` resolves other features, so there this builds more); a plain
/// `cargo build --workspace --bins` resolves other features and compiles much of the
/// graph again. Cargo does not hold the build directory lock while tests run; should the
/// lock stay taken for [`LOCK_WAIT`] (another build, or an older cargo that holds it for the
/// whole test run), the test stops naming the command instead of waiting for ever.
fn build_functions() -> PathBuf {
    let dir = bin_dir();
    let target_dir = dir.parent().expect("target/<profile>");
    let mut command = vec!["build", "--workspace", "--bins", "--examples"];
    let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
    match profile {
        "debug" => {}
        "release" => command.push("--release"),
        other => command.extend(["--profile", other]),
    }
    let shown = format!("cargo {}", command.join(" "));
    let started = Instant::now();
    let mut cargo = Command::new(env!("CARGO"));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(describes_this_package) {
            cargo.env_remove(name);
        }
    }
    let mut child = cargo
        .current_dir(workspace())
        .args(&command)
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    // Cargo's output, read on a thread so that a wait for the build lock can be bounded.
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, output_lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut output = Vec::new();
    let mut blocked_since: Option<Instant> = None;
    loop {
        match output_lines.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => {
                // Any later line means cargo got the lock.
                blocked_since = (line.contains("Blocking waiting for file lock")
                    && line.contains("directory"))
                .then(|| {
                    eprintln!("{shown}: {}", line.trim());
                    Instant::now()
                });
                output.push(line);
            }
            Err(RecvTimeoutError::Timeout) => {
                if blocked_since.is_some_and(|since| since.elapsed() > LOCK_WAIT) {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{shown} waited {LOCK_WAIT:?} for cargo's lock on {} (held by another \
                         build, or by the cargo running this test if it is an old one); build \
                         the function binaries first (`{shown}` with CARGO_TARGET_DIR={}), \
                         then run the test again:\n{}",
                        target_dir.display(),
                        target_dir.display(),
                        output.join("\n")
                    );
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child.wait().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(
        status.success(),
        "building the Lambda function binaries with `{shown}` failed:\n{}",
        output.join("\n")
    );
    for function in FUNCTIONS {
        assert!(
            dir.join(function).is_file(),
            "{shown} made no {function} binary"
        );
    }
    let compiled = output
        .iter()
        .filter(|l| l.trim_start().starts_with("Compiling"))
        .count();
    eprintln!(
        "function binaries up to date in {} ms, {compiled} crates compiled ({shown})",
        started.elapsed().as_millis()
    );
    dir
}

/// Credentials answered by the admin create-tenant event, substituted into later events.
#[derive(Default)]
struct Placeholders {
    values: Vec<(&'static str, String)>,
}

impl Placeholders {
    fn learn(&mut self, created: &Value) {
        use base64::Engine;
        let s = |v: &Value| v.as_str().expect("credential").to_string();
        let basic = format!(
            "{}:{}",
            s(&created["basic"]["username"]),
            s(&created["basic"]["password"])
        );
        self.values = vec![
            ("REPLACE_WITH_API_KEY", s(&created["api_key"])),
            (
                "REPLACE_WITH_BASIC",
                base64::engine::general_purpose::STANDARD.encode(basic),
            ),
            ("REPLACE_WITH_TENANT_ID", s(&created["id"])),
        ];
    }

    fn apply(&self, text: &str) -> String {
        self.values
            .iter()
            .fold(text.to_string(), |t, (k, v)| t.replace(k, v))
    }

    fn tenant_id(&self) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == "REPLACE_WITH_TENANT_ID")
            .map(|(_, v)| v.as_str())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sample_event_gets_its_expected_answer_from_the_lambda_binaries() {
    let events_dir = workspace().join("events");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(events_dir.join("manifest.json")).expect("manifest"),
    )
    .expect("manifest is JSON");
    let entries = manifest["events"].as_array().expect("events list").clone();
    let mut listed: Vec<String> = entries
        .iter()
        .map(|e| e["file"].as_str().expect("file").to_string())
        .collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(&events_dir)
        .expect("events dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "manifest.json")
        .collect();
    listed.sort();
    on_disk.sort();
    assert_eq!(
        listed, on_disk,
        "every event file has a manifest entry and back"
    );

    let binaries = build_functions();
    let moto = Moto::start();
    let bucket = moto.bucket("lambda-events");
    let environments = tempfile::tempdir().expect("environments dir");
    let mut vars = vec![
        ("SANDBOX_S3_BUCKET".to_string(), bucket.bucket.clone()),
        ("SANDBOX_S3_PREFIX".to_string(), "lambda".to_string()),
        ("SANDBOX_S3_ENDPOINT".to_string(), moto.endpoint.clone()),
        // Relative to each environment's own directory: no function sees another's local
        // cache, so whatever one function wrote reaches the others through S3 only.
        ("SANDBOX_DATA_DIR".to_string(), "data".to_string()),
        (
            "SANDBOX_ADMIN_KEY".to_string(),
            EVENTS_ADMIN_KEY.to_string(),
        ),
        ("RUST_LOG".to_string(), "warn".to_string()),
    ];
    vars.extend(AWS_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut lambda = LambdaRuntime::new(&binaries, vars, environments.path());

    let mut placeholders = Placeholders::default();
    let mut verified = Vec::new();
    // Milliseconds of each function's first invocation: process start, cold load of the
    // registry and tenant from S3, and the answer.
    let mut first_invoke_ms: Vec<(String, u128)> = Vec::new();
    for entry in &entries {
        let file = entry["file"].as_str().expect("file");
        let function = entry["function"].as_str().expect("function");
        let expected = entry["status"].as_u64().expect("status");
        let raw = std::fs::read_to_string(events_dir.join(file)).expect("event");
        let event: Value = serde_json::from_str(&raw).expect("event is JSON");
        assert_eq!(
            event["version"], "2.0",
            "{file}: an HTTP API payload v2 event"
        );
        let sent: Value =
            serde_json::from_str(&placeholders.apply(&raw)).expect("substituted event is JSON");

        let started = Instant::now();
        let answer = lambda
            .invoke(function, sent)
            .await
            .unwrap_or_else(|e| panic!("{file} sent to {function}: {e}"));
        if !first_invoke_ms.iter().any(|(f, _)| f == function) {
            first_invoke_ms.push((function.to_string(), started.elapsed().as_millis()));
        }
        let status = answer["statusCode"].as_u64().expect("statusCode");
        let body = answer["body"].as_str().unwrap_or_default().to_string();
        assert_eq!(status, expected, "{file}: {body}");
        let needle = entry["contains"].as_str().unwrap_or_default();
        assert!(body.contains(needle), "{file}: {needle:?} not in {body}");
        if file == "admin-create-tenant.json" {
            placeholders.learn(&serde_json::from_str(&body).expect("tenant JSON"));
        }
        verified.push(file.to_string());
    }
    eprintln!("verified: {verified:?}\nfirst invocation ms: {first_invoke_ms:?}");
    assert_eq!(
        verified.len(),
        entries.len(),
        "every event answered as expected"
    );

    // The state is in moto's S3: the registry's log and the tenant's own log (docs/storage.md).
    let keys = moto.keys(&bucket.bucket, "lambda/");
    let tenant = placeholders.tenant_id().expect("the tenant was created");
    for prefix in [
        "lambda/registry/log/".to_string(),
        format!("lambda/tenants/{tenant}/log/"),
    ] {
        assert!(
            keys.iter().any(|k| k.starts_with(&prefix)),
            "no {prefix}* object in the bucket: {keys:?}"
        );
    }
}

/// A stand-in "binary" for the emulator's own tests: a shell script named `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Plays the function's side of one invocation, as `lambda_runtime` does: polls
/// `invocation/next` at `api` (host:port), checks the event and its headers, then posts
/// `answer` to `outcome` (`response` or `error`, or the `init/error` call when `None`).
/// Answers the request id and the status of the post.
async fn play_function(api: &str, event: &Value, outcome: Option<&str>, answer: Value) -> String {
    let client = reqwest::Client::new();
    let next = client
        .get(format!("http://{api}/2018-06-01/runtime/invocation/next"))
        .send()
        .await
        .expect("invocation/next");
    assert_eq!(next.status(), 200);
    let header = |name: &str| {
        next.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_string()
    };
    let id = header("lambda-runtime-aws-request-id");
    let deadline: u128 = header("lambda-runtime-deadline-ms")
        .parse()
        .expect("deadline ms");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis();
    assert!(
        deadline > now && deadline <= now + 29_000,
        "deadline {deadline}, now {now}"
    );
    assert_eq!(
        header("lambda-runtime-invoked-function-arn"),
        "arn:aws:lambda:us-east-1:123456789012:function:probe"
    );
    assert!(header("lambda-runtime-trace-id").starts_with("Root=1-"));
    assert_eq!(&next.json::<Value>().await.expect("event JSON"), event);
    let url = match outcome {
        Some(kind) => format!("http://{api}/2018-06-01/runtime/invocation/{id}/{kind}"),
        None => format!("http://{api}/2018-06-01/runtime/init/error"),
    };
    let posted = client
        .post(url)
        .header("lambda-runtime-function-error-type", "Handler.Probe")
        .json(&answer)
        .send()
        .await
        .expect("post the outcome");
    assert_eq!(posted.status(), 202, "the outcome is accepted");
    id
}

#[tokio::test]
async fn the_emulator_speaks_the_runtime_protocol_and_reports_every_outcome() {
    let bins = tempfile::tempdir().expect("bins");
    let work = tempfile::tempdir().expect("work");
    // The stand-in writes what the emulator gave it, then waits while the test plays it.
    script(
        bins.path(),
        "probe",
        "echo \"$AWS_LAMBDA_RUNTIME_API $AWS_LAMBDA_FUNCTION_NAME \
         $AWS_LAMBDA_FUNCTION_MEMORY_SIZE $AWS_LAMBDA_FUNCTION_VERSION\" > given.tmp\n\
         mv given.tmp given\nexec sleep 60",
    );
    script(
        bins.path(),
        "crashes",
        "echo 'config is broken' >&2\nexit 3",
    );
    let mut lambda = LambdaRuntime::new(bins.path(), Vec::new(), work.path());
    let given = work.path().join("probe").join("given");

    // A response: the invocation answers the function's document.
    let event = serde_json::json!({"version": "2.0", "rawPath": "/one"});
    let api = async {
        // The emulator starts the function process; it writes what it was given, or the test
        // fails naming that instead of hanging.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !given.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the probe function never wrote {}",
                given.display()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let text = std::fs::read_to_string(&given).expect("given");
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields[1..], ["probe", "512", "$LATEST"], "{text}");
        fields[0].to_string()
    };
    let (answer, (api, first_id)) = tokio::join!(lambda.invoke("probe", event.clone()), async {
        let api = api.await;
        let id = play_function(&api, &event, Some("response"), serde_json::json!({"ok": 1})).await;
        (api, id)
    });
    assert_eq!(answer, Ok(serde_json::json!({"ok": 1})));

    // A function error: the invocation fails with its type and diagnostic.
    let event = serde_json::json!({"n": 2});
    let (answer, second_id) = tokio::join!(
        lambda.invoke("probe", event.clone()),
        play_function(
            &api,
            &event,
            Some("error"),
            serde_json::json!({"errorMessage": "no"})
        )
    );
    assert_ne!(
        first_id, second_id,
        "each invocation has its own request id"
    );
    let error = answer.expect_err("a function error");
    assert!(
        error.contains("Handler.Probe") && error.contains("no"),
        "{error}"
    );

    // An answer to an invocation that is over is refused in the runtime API's shape.
    let late = reqwest::Client::new()
        .post(format!(
            "http://{api}/2018-06-01/runtime/invocation/{first_id}/response"
        ))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("late response");
    assert_eq!(late.status(), 400);
    let body: Value = late.json().await.expect("error JSON");
    assert_eq!(body["errorType"], "InvalidRequestID");

    // An init error fails the pending invocation and every later one.
    let event = serde_json::json!({"n": 3});
    let (answer, _) = tokio::join!(
        lambda.invoke("probe", event.clone()),
        play_function(
            &api,
            &event,
            None,
            serde_json::json!({"errorMessage": "bad env"})
        )
    );
    let error = answer.expect_err("an init error");
    assert!(
        error.contains("init error") && error.contains("bad env"),
        "{error}"
    );
    let later = lambda.invoke("probe", event).await;
    assert!(later.is_err_and(|e| e.contains("bad env")));

    // A process that exits fails its invocation with its output.
    let error = lambda
        .invoke("crashes", serde_json::json!({}))
        .await
        .expect_err("the process exited");
    assert!(
        error.contains("exited") && error.contains("config is broken"),
        "{error}"
    );
}
