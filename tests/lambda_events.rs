//! End to end through the real Lambda binaries: `cargo lambda watch` serves the five route
//! group functions (state in moto's S3), and every file of `events/` is sent with
//! `cargo lambda invoke`; each answer is checked against `events/manifest.json`.
//!
//! The function binaries are built once, into their own target directory
//! (`target/lambda-e2e`): the `cargo test` that runs this test holds the lock of the main one.

use e2e::s3::{free_port, Moto, AWS_ENV};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The admin key the sample events carry.
const EVENTS_ADMIN_KEY: &str = "sandbox-admin-key";
const FUNCTIONS: [&str; 5] = ["legacy", "usage", "billing", "revenue", "admin"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn lambda_target_dir() -> PathBuf {
    workspace().join("target").join("lambda-e2e")
}

/// Installs cargo-lambda from tests/requirements.txt when it is missing.
fn ensure_cargo_lambda() {
    e2e::ensure_test_tools(|| e2e::runs("cargo", &["lambda", "--version"]));
}

fn build_functions() {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(workspace())
        .args(["build", "--bins"])
        .env("CARGO_TARGET_DIR", lambda_target_dir());
    for f in FUNCTIONS {
        cmd.args(["-p", f]);
    }
    let status = cmd.status().expect("cargo build");
    assert!(status.success(), "building the Lambda binaries failed");
}

/// `cargo lambda watch` in its own process group, stopped with the group on drop.
struct Watch {
    child: Child,
    port: u16,
}

impl Watch {
    fn start(moto: &Moto, bucket: &str, data_dir: &Path, log: &Path) -> Watch {
        let port = free_port();
        let mut cmd = Command::new("cargo");
        cmd.current_dir(workspace())
            .args([
                "lambda",
                "watch",
                "--ignore-changes",
                "-q",
                "-A",
                "127.0.0.1",
                "-P",
            ])
            .arg(port.to_string())
            // cargo-lambda passes --target-dir on to `cargo metadata`, which refuses it.
            .env("CARGO_TARGET_DIR", lambda_target_dir());
        let mut vars = vec![
            format!("SANDBOX_S3_BUCKET={bucket}"),
            "SANDBOX_S3_PREFIX=lambda".to_string(),
            format!("SANDBOX_S3_ENDPOINT={}", moto.endpoint),
            format!("SANDBOX_DATA_DIR={}", data_dir.display()),
            format!("SANDBOX_ADMIN_KEY={EVENTS_ADMIN_KEY}"),
            "RUST_LOG=warn".to_string(),
        ];
        vars.extend(AWS_ENV.iter().map(|(k, v)| format!("{k}={v}")));
        for v in vars {
            cmd.args(["--env-var", &v]);
        }
        use std::os::unix::process::CommandExt;
        let output = std::fs::File::create(log).expect("watch log");
        let child = cmd
            .process_group(0)
            .stdout(output.try_clone().expect("log"))
            .stderr(output)
            .spawn()
            .expect("cargo lambda watch");
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "cargo lambda watch did not start: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Watch { child, port }
    }

    /// Invokes `function` with the event in `file`; answers the function's response.
    fn invoke(&self, function: &str, file: &Path) -> Value {
        let out = Command::new("cargo")
            .current_dir(workspace())
            .args(["lambda", "invoke", "-A", "127.0.0.1", "-P"])
            .arg(self.port.to_string())
            .arg(function)
            .arg("--data-file")
            .arg(file)
            .output()
            .expect("cargo lambda invoke");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "invoke {function} {}: {stdout} {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{function}: {e}: {stdout}"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // `--` so that the negative process-group id is not read as an option.
        let _ = Command::new("kill")
            .args(["-s", "TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
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
}

#[test]
fn every_sample_event_gets_its_expected_answer_from_the_lambda_binaries() {
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

    ensure_cargo_lambda();
    build_functions();
    let moto = Moto::start();
    let bucket = moto.bucket("lambda-events");
    let data_dir = tempfile::tempdir().expect("data dir");
    let scratch = tempfile::tempdir().expect("scratch");
    let watch = Watch::start(
        &moto,
        &bucket.bucket,
        data_dir.path(),
        &scratch.path().join("watch.log"),
    );

    let mut placeholders = Placeholders::default();
    let mut verified = Vec::new();
    // Milliseconds of each function's first invocation: process start (by the emulator), cold
    // load of the registry and tenant from S3, and the answer, plus the CLI's own overhead.
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
        let sent = scratch.path().join(file);
        std::fs::write(&sent, placeholders.apply(&raw)).expect("write event");

        let started = Instant::now();
        let answer = watch.invoke(function, &sent);
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
}
