//! The real `sandbox serve` binary: first start creates and prints the demo tenant, every
//! prefix answers, data persists across a restart, Ctrl-C (SIGINT) shuts down cleanly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    lines: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed assertion must not leave a server running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn start(data_dir: &std::path::Path, port: u16) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--admin-key",
            "adm-test",
        ])
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start sandbox");
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || Instant::now() > deadline {
            break;
        }
        let done = line.contains("/sandbox/v1/tenants") || line.contains("Existing tenants kept");
        lines.push(line.trim_end().to_string());
        if done {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut rest = String::new();
        while reader.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
            rest.clear();
        }
    });
    Server { child, lines }
}

fn value_after<'a>(lines: &'a [String], label: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.trim().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no '{label}' in banner: {lines:#?}"))
}

fn interrupt(server: Server) {
    let mut server = server;
    let pid = server.child.id().to_string();
    let status = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            assert!(exit.success(), "clean exit after Ctrl-C, got {exit}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "server did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn serve_prints_demo_credentials_persists_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = start(dir.path(), port);
    let key = value_after(&server.lines, "api key:").to_string();
    let basic = value_after(&server.lines, "basic:").to_string();
    let (user, pass) = basic.split_once(':').unwrap();
    assert_eq!(user, "demo");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();

    let a = client
        .get(format!("{base}/t/s/r/1.28/users/current"))
        .basic_auth(user, Some(pass))
        .send()
        .await
        .unwrap();
    assert_eq!(a.status(), 200);
    let b = client
        .get(format!("{base}/billing/2/adjustment-categories/5"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(b.status(), 200);
    let c = client
        .get(format!("{base}/revenue/3/collectors"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(c.status(), 200);
    let admin = client
        .get(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", "adm-test")
        .send()
        .await
        .unwrap();
    assert_eq!(admin.status(), 200);
    let curl_lines = server
        .lines
        .iter()
        .filter(|l| l.trim_start().starts_with("curl "))
        .count();
    assert_eq!(curl_lines, 4, "one curl line per surface and the admin API");
    interrupt(server);

    // Restart on the same data: no new demo tenant, the same credentials still work.
    let server = start(dir.path(), port);
    let client = reqwest::Client::new();
    assert!(
        server
            .lines
            .iter()
            .any(|l| l.contains("Existing tenants kept")),
        "{:#?}",
        server.lines
    );
    let b = client
        .get(format!("{base}/billing/2/adjustment-categories/5"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(b.status(), 200);
    let tenants: serde_json::Value = client
        .get(format!("{base}/sandbox/v1/tenants"))
        .header("X-Admin-Key", "adm-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tenants.as_array().unwrap().len(), 1);
    interrupt(server);
}
