//! The `sandbox` command line against the real `sandbox serve` binary: `--json` answers
//! parsed back, `tenant create --env` evaluated by `sh` and used with curl, every error exit
//! code, the journal followed without duplicates, the sample events rewritten, and a load of
//! 2,000 events whose summary matches what the tenant stored.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

mod common;

use common::{cli_command, free_port, Run, Server, ADMIN_KEY};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `script` under `sh -c` with the server's URL and admin key exported.
fn sh(server: &Server, script: &str) -> Run {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("SANDBOX_URL", &server.base)
        .env("SANDBOX_ADMIN_KEY", ADMIN_KEY)
        .env("SANDBOX", env!("CARGO_BIN_EXE_sandbox"))
        .env_remove("SANDBOX_API_KEY")
        .env_remove("SANDBOX_BASIC")
        .env_remove("SANDBOX_TENANT")
        .output()
        .expect("sh");
    Run::of(out)
}

/// The `export NAME='value'` lines of `--env` as pairs.
fn exports(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let rest = l.strip_prefix("export ").expect("export line");
            let (k, v) = rest.split_once('=').expect("NAME=value");
            let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
            (k.to_string(), v.expect("single-quoted").to_string())
        })
        .collect()
}

#[test]
fn json_answers_parse_back_and_env_lines_work_in_a_shell() {
    let server = Server::start();
    let created = server
        .cli(&["tenant", "create", "cli-json", "--json"])
        .json();
    let id = created["id"].as_str().expect("id");
    assert!(created["api_key"]
        .as_str()
        .expect("key")
        .starts_with("sbx_"));
    let list = server.cli(&["tenant", "list", "--json"]).json();
    let names: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"cli-json") && names.contains(&"demo"),
        "{names:?}"
    );
    // By name and by id, the same tenant.
    let by_name = server.cli(&["tenant", "show", "cli-json", "--json"]).json();
    let by_id = server.cli(&["tenant", "show", id, "--json"]).json();
    assert_eq!(by_name, by_id);
    assert_eq!(by_name["id"], created["id"]);

    // --env, evaluated by a shell, then used with curl on Surfaces A and B.
    let run = sh(
        &server,
        r#"set -e
eval "$("$SANDBOX" tenant create ci-job --seed empty --env)"
printf '%s\n' "$SANDBOX_TENANT"
curl -s -o /dev/null -w '%{http_code}\n' -H "X-Api-Key: $SANDBOX_API_KEY" "$SANDBOX_URL/billing/2/adjustment-categories"
curl -s -u "$SANDBOX_BASIC" "$SANDBOX_URL/t/s/r/1.28/users/current"
"#,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let mut lines = run.stdout.lines();
    let tenant = lines.next().expect("tenant id");
    assert!(tenant.starts_with("t_"), "{}", run.stdout);
    assert_eq!(lines.next(), Some("200"), "{}", run.stdout);
    let user = lines.collect::<Vec<_>>().join("\n");
    assert!(user.contains("ci-job"), "users/current: {user}");
    // The env lines are shell-quoted and name the four variables.
    let env = server.cli(&["tenant", "create", "cli-env2", "--env"]);
    let vars = exports(&env.stdout);
    let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "SANDBOX_URL",
            "SANDBOX_TENANT",
            "SANDBOX_API_KEY",
            "SANDBOX_BASIC"
        ]
    );
    assert_eq!(vars[0].1, server.base);

    // Checkpoint, fork from it, restore it.
    let cp = server
        .cli(&["checkpoint", "create", "cli-json", "golden", "--json"])
        .json();
    assert_eq!(cp["name"], "golden");
    let listed = server.cli(&["checkpoint", "list", id, "--json"]).json();
    assert_eq!(listed[0]["name"], "golden");
    let fork = server
        .cli(&[
            "tenant",
            "create",
            "cli-fork",
            "--from",
            "cli-json:golden",
            "--json",
        ])
        .json();
    assert_eq!(fork["from"]["tenant"], id);
    assert_eq!(fork["from"]["checkpoint"], "golden");
    let restored = server
        .cli(&["checkpoint", "restore", "cli-json", "golden", "--json"])
        .json();
    assert_eq!(restored["checkpoint"]["name"], "golden");

    // The clock: a month is the calendar month after the reading, days are seconds.
    let frozen = server
        .cli(&[
            "clock",
            "freeze",
            "cli-json",
            "2026-01-31T10:00:00Z",
            "--json",
        ])
        .json();
    assert_eq!(frozen["mode"], "frozen");
    let month = server
        .cli(&["clock", "advance", "cli-json", "1M", "--json"])
        .json();
    let from = chrono::DateTime::parse_from_rfc3339(month["advanced_from"].as_str().unwrap())
        .expect("from");
    let to =
        chrono::DateTime::parse_from_rfc3339(month["advanced_to"].as_str().unwrap()).expect("to");
    assert_eq!(
        to,
        from.checked_add_months(chrono::Months::new(1)).unwrap(),
        "{month}"
    );
    let days = server
        .cli(&["clock", "advance", "cli-json", "2d", "--json"])
        .json();
    let from = chrono::DateTime::parse_from_rfc3339(days["advanced_from"].as_str().unwrap())
        .expect("from");
    let to =
        chrono::DateTime::parse_from_rfc3339(days["advanced_to"].as_str().unwrap()).expect("to");
    assert_eq!((to - from).num_seconds(), 2 * 86_400);
    let real = server.cli(&["clock", "real", "cli-json", "--json"]).json();
    assert_eq!(real["mode"], "real");

    // A fault rule, hit once, seen in the journal, removed.
    let rule = server
        .cli(&[
            "fault",
            "add",
            "cli-json",
            "--path",
            "/billing/2/*",
            "--status",
            "503",
            "--times",
            "1",
            "--json",
        ])
        .json();
    let rule_id = rule["id"].as_str().expect("rule id").to_string();
    let key = created["api_key"].as_str().unwrap();
    let hit = sh(
        &server,
        &format!("curl -s -o /dev/null -w '%{{http_code}}' -H 'X-Api-Key: {key}' \"$SANDBOX_URL/billing/2/adjustment-categories\""),
    );
    assert_eq!(hit.stdout, "503");
    let journal = server.cli(&["requests", "cli-json", "--status", "5xx", "--json"]);
    assert_eq!(journal.code, 0, "{}", journal.stderr);
    let entries: Vec<Value> = journal
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON entry a line"))
        .collect();
    assert_eq!(entries.len(), 1, "{}", journal.stdout);
    assert_eq!(entries[0]["fault"], rule_id.as_str());
    let listed = server.cli(&["fault", "list", "cli-json", "--json"]).json();
    assert_eq!(listed[0]["id"], rule_id.as_str());
    server
        .cli(&["fault", "remove", "cli-json", &rule_id, "--json"])
        .json();
    assert_eq!(
        server.cli(&["fault", "list", "cli-json", "--json"]).json(),
        Value::Array(vec![])
    );

    // A token works as Surface B's bearer credential.
    let token = server.cli(&["tenant", "token", "cli-json"]);
    assert_eq!(token.code, 0, "{}", token.stderr);
    let bearer = sh(
        &server,
        &format!(
            "curl -s -o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer {}' \"$SANDBOX_URL/billing/2/adjustment-categories\"",
            token.stdout.trim()
        ),
    );
    assert_eq!(bearer.stdout, "200");

    // Human tables name their columns; reset and delete.
    let table = server.cli(&["tenant", "list"]);
    assert!(table.stdout.starts_with("id "), "{}", table.stdout);
    assert!(table.stdout.contains("cli-fork"));
    assert_eq!(server.cli(&["tenant", "reset", "cli-json"]).code, 0);
    assert_eq!(server.cli(&["tenant", "delete", "cli-fork"]).code, 0);
    assert_eq!(server.cli(&["tenant", "show", "cli-fork"]).code, 5);
}

#[test]
fn every_failure_has_its_exit_code() {
    let server = Server::start();
    let expect = |run: Run, code: i32, needle: &str| {
        assert_eq!(
            run.code, code,
            "stdout: {}\nstderr: {}",
            run.stdout, run.stderr
        );
        assert!(run.stderr.contains(needle), "stderr: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    };
    // 2: a wrong command line (clap), including a duration without a unit.
    expect(server.cli(&["tenant", "frobnicate"]), 2, "unrecognized");
    expect(
        server.cli(&["clock", "advance", "demo", "31"]),
        2,
        "no unit",
    );
    expect(
        server.cli(&["tenant", "list", "--url", "ftp://127.0.0.1"]),
        2,
        "not an http:// or https:// URL",
    );
    expect(
        server.cli(&["tenant", "create", "f", "--from", "demo"]),
        2,
        "TENANT:CHECKPOINT",
    );
    // 3: nothing listens there; the URL is named.
    let dead = format!("http://127.0.0.1:{}", free_port());
    expect(
        server.cli(&["tenant", "list", "--url", &dead]),
        3,
        &format!("cannot reach the sandbox at {dead}"),
    );
    // 4: a wrong admin key, and none at all.
    expect(
        server.cli(&["tenant", "list", "--admin-key", "wrong-key-wrong-key"]),
        4,
        "refused the admin key (401)",
    );
    let mut none = cli_command();
    none.args(["tenant", "list", "--url", &server.base]);
    expect(Run::of(none.output().expect("run")), 4, "no admin key");
    // 5: an unknown tenant, an unknown checkpoint.
    expect(
        server.cli(&["tenant", "show", "nobody"]),
        5,
        "no tenant 'nobody'",
    );
    expect(
        server.cli(&["checkpoint", "restore", "demo", "never-made"]),
        5,
        "404",
    );
    // 6: refused input, with the server's message.
    expect(
        server.cli(&["tenant", "create", "demo"]),
        6,
        "already exists",
    );
    expect(
        server.cli(&["clock", "freeze", "demo", "not-a-date"]),
        6,
        "frozen_at",
    );
    expect(
        server.cli(&["fault", "add", "demo", "--path", "/x", "--status", "200"]),
        6,
        "refused (400)",
    );
    // 1: a fixtures file that is not there is named.
    expect(
        server.cli(&["tenant", "create", "fx", "--fixtures", "no-such-file.json"]),
        1,
        "no-such-file.json",
    );
    let help = server.cli(&["fixtures", "--help"]);
    assert!(help.stdout.contains("export"), "{}", help.stdout);
    // The demo tenant exported: a document with ids and absolute dates.
    let demo = server.cli(&["fixtures", "export", "demo"]).json();
    assert_eq!(
        demo["billing_accounts"][0]["account_num"], "ACC-1001",
        "{demo}"
    );
    expect(
        server.cli(&["fixtures", "export", "no-such-tenant"]),
        5,
        "no-such-tenant",
    );
    // A tenant from docs/fixtures.md's example, and a document applied to it.
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/fixtures.md"
    ))
    .expect("docs/fixtures.md");
    let example = docs
        .split("```json")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a json example in docs/fixtures.md");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("example.json");
    std::fs::write(&file, example).expect("write");
    let file = file.to_str().expect("utf-8 path");
    let created = server
        .cli(&["tenant", "create", "fx", "--fixtures", file, "--json"])
        .json();
    assert_eq!(created["name"], "fx", "{created}");
    // Exported, the tenant's document creates a tenant whose export is the same, and
    // applies to the tenant itself without a change (its records exist: updated in place).
    let exported = server.cli(&["fixtures", "export", "fx"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let first: serde_json::Value = exported.json();
    let copy = dir.path().join("exported.json");
    std::fs::write(&copy, &exported.stdout).expect("write");
    let copy = copy.to_str().expect("utf-8 path");
    let made = server.cli(&["tenant", "create", "fx-copy", "--fixtures", copy]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    assert_eq!(server.cli(&["fixtures", "export", "fx-copy"]).json(), first);
    let again = server.cli(&["fixtures", "apply", "fx", copy]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(server.cli(&["fixtures", "export", "fx"]).json(), first);
    let missing = dir.path().join("missing.json");
    std::fs::write(
        &missing,
        r#"{"usage_rules": [{"id": 1, "product_id": 987654321}]}"#,
    )
    .expect("write");
    expect(
        server.cli(&["fixtures", "apply", "fx", missing.to_str().expect("path")]),
        6,
        "usage_rules[0].product_id",
    );
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").expect("write");
    let applied = server.cli(&["fixtures", "apply", "fx", empty.to_str().expect("path")]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let help = server.cli(&["--help"]);
    assert!(help.stdout.contains("Exit codes"), "{}", help.stdout);
}

#[test]
fn follow_prints_each_new_request_once_until_interrupted() {
    let server = Server::start();
    let created = server.cli(&["tenant", "create", "follow", "--json"]).json();
    let key = created["api_key"].as_str().unwrap().to_string();
    // The follower talks to the server through a proxy that counts its polls.
    let polls = PollCounter::start(&server.base);
    let mut child = cli_command()
        .args([
            "requests",
            "follow",
            "--follow",
            "--json",
            "--interval-ms",
            "200",
        ])
        .args(["--path", "/billing/2/*"])
        .env("SANDBOX_URL", &polls.base)
        .env("SANDBOX_ADMIN_KEY", ADMIN_KEY)
        .stdout(Stdio::piped())
        .spawn()
        .expect("follow");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut ids = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    // Requests arrive across polls (a round is sent once the follower printed the one before
    // it), several per poll.
    for round in 0..3 {
        for _ in 0..3 {
            let r = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-H"])
                .arg(format!("X-Api-Key: {key}"))
                .arg(format!(
                    "{}/billing/2/adjustment-categories?page_size={}",
                    server.base,
                    round + 1
                ))
                .status()
                .expect("curl");
            assert!(r.success());
        }
        while ids.len() < 3 * (round + 1) {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                panic!("round {round}: the follower printed {ids:?} within 20 s");
            };
            let entry: Value = serde_json::from_str(&line).expect("JSON line");
            ids.push(entry["id"].as_str().unwrap().to_string());
        }
    }
    // Two more polls answered: the one after the poll that printed the ninth entry has
    // printed whatever it found (a repeat would be there) before the second was sent.
    polls.wait_for(polls.count() + 2, Duration::from_secs(20));
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "Ctrl-C ends --follow cleanly");
    // Everything it printed, to the end of its output.
    let drained = Instant::now() + Duration::from_secs(20);
    loop {
        let left = drained.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let entry: Value = serde_json::from_str(&line).expect("JSON line");
                ids.push(entry["id"].as_str().unwrap().to_string());
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(e) => panic!("the follower's output did not end: {e}"),
        }
    }
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), 9, "each of the 9 requests once: {ids:?}");
    assert_eq!(unique.len(), 9, "no duplicates: {ids:?}");
}

#[test]
fn sample_events_get_the_tenants_credentials() {
    let server = Server::start();
    let env = server.cli(&["tenant", "create", "events", "--env"]);
    let vars: std::collections::HashMap<String, String> =
        exports(&env.stdout).into_iter().collect();
    let out = tempfile::tempdir().expect("dir");
    let events_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
    let env_pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = server.cli_env(
        &[
            "events",
            "events",
            "--dir",
            events_dir,
            "--out",
            out.path().to_str().unwrap(),
        ],
        &env_pairs,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let written: Vec<&str> = run.stdout.lines().collect();
    let samples = std::fs::read_dir(events_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "manifest.json")
        .count();
    assert_eq!(written.len(), samples, "{}", run.stdout);
    let basic64 = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&vars["SANDBOX_BASIC"])
    };
    let mut seen = (false, false, false);
    for path in written {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains("REPLACE_WITH_"), "{path}: {text}");
        assert!(!text.contains("sandbox-admin-key"), "{path}");
        serde_json::from_str::<Value>(&text).expect("still JSON");
        seen.0 |= text.contains(&vars["SANDBOX_API_KEY"]);
        seen.1 |= text.contains(&basic64);
        seen.2 |= text.contains(&vars["SANDBOX_TENANT"]) && text.contains(ADMIN_KEY);
    }
    assert_eq!(seen, (true, true, true));
    // Without the tenant's secrets: a clear refusal naming where they come from.
    let run = server.cli(&["events", "events", "--dir", events_dir]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("SANDBOX_API_KEY"), "{}", run.stderr);
}

/// The stored events of a run, counted by Surface B.
async fn stored(base: &str, key: &str, reference_id: &str) -> u64 {
    let r = reqwest::Client::new()
        .get(format!(
            "{base}/billing/2/usage-events?reference_id={reference_id}&page_size=1"
        ))
        .header("X-Api-Key", key)
        .send()
        .await
        .expect("list");
    assert_eq!(r.status(), 200);
    r.headers()["x-total-count"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_load_of_2000_events_matches_what_the_tenant_stored() {
    let server = Server::start();
    let env = server.cli(&["tenant", "create", "load", "--env"]);
    let vars = exports(&env.stdout);
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let key = vars[2].1.clone();
    let run = server.cli_env(&["load-usage", "--events", "2000", "--json"], &pairs);
    let s = run.json();
    assert_eq!(s["events"], 2000);
    assert_eq!(s["requests"], 40);
    let (rated, erred) = (s["rated"].as_u64().unwrap(), s["erred"].as_u64().unwrap());
    assert_eq!(rated + erred, 2000, "{s}");
    assert!(rated > 0, "{s}");
    let by_code: u64 = s["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(by_code, erred);
    let reference = s["reference_id"].as_str().unwrap();
    assert_eq!(stored(&server.base, &key, reference).await, rated, "{s}");
    for p in ["p50", "p95", "p99"] {
        assert!(s["latency_ms"][p].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(s["latency_ms"]["p50"].as_f64() <= s["latency_ms"]["p99"].as_f64());
    assert!(
        run.stderr.contains("2000/2000 events posted"),
        "{}",
        run.stderr
    );

    // Two calls answered 503 by a fault rule: their events are erred under its code, and
    // the rest is what was stored.
    let rule = server.cli_env(
        &[
            "fault",
            "add",
            "load",
            "--path",
            "/billing/2/usage-events/bulk",
            "--status",
            "503",
            "--times",
            "2",
            "--json",
        ],
        &pairs,
    );
    rule.json();
    let run = server.cli_env(
        &[
            "load-usage",
            "--events",
            "500",
            "--batch",
            "25",
            "--rate",
            "5000",
            "--srids",
            "srv-compute-0001=HOUR,meter-0001",
            "--json",
        ],
        &pairs,
    );
    let s = run.json();
    assert_eq!(s["errors"]["SERVICE_UNAVAILABLE"], 50, "{s}");
    let rated = s["rated"].as_u64().unwrap();
    assert_eq!(rated + s["erred"].as_u64().unwrap(), 500);
    let reference = s["reference_id"].as_str().unwrap();
    assert_eq!(stored(&server.base, &key, reference).await, rated, "{s}");
    assert_eq!(
        s["pairs"],
        serde_json::json!(["srv-compute-0001=HOUR", "meter-0001=KILOWATTS_PER_HOUR"])
    );
    // A wrong API key stops the run with exit 4.
    let run = server.cli_env(
        &["load-usage", "--events", "10", "--tenant", "load"],
        &[("SANDBOX_API_KEY", "sbx_wrong")],
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
}

/// A TCP proxy in front of a server that counts the journal reads (`GET .../requests?`)
/// passing through it, whatever connection carries them.
struct PollCounter {
    base: String,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl PollCounter {
    fn start(upstream: &str) -> PollCounter {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        let upstream = upstream
            .strip_prefix("http://")
            .expect("an http:// base")
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = count.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (mut from_client, mut to_server) = (client, server);
                let (mut from_server, mut to_client) = (
                    to_server.try_clone().expect("clone"),
                    from_client.try_clone().expect("clone"),
                );
                let counted = counted.clone();
                std::thread::spawn(move || {
                    // Request heads are text; a needle split across reads is kept in `tail`.
                    let needle = b"/requests?";
                    let (mut buf, mut tail) = ([0u8; 8192], Vec::new());
                    while let Ok(n) = from_client.read(&mut buf) {
                        if n == 0 || to_server.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        tail.extend_from_slice(&buf[..n]);
                        let found = tail.windows(needle.len()).filter(|w| w == needle).count();
                        counted.fetch_add(found, std::sync::atomic::Ordering::SeqCst);
                        let keep = tail.len().min(needle.len() - 1);
                        tail.drain(..tail.len() - keep);
                    }
                    let _ = to_server.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_server, &mut to_client);
                    let _ = to_client.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        PollCounter { base, count }
    }

    /// Journal reads sent so far.
    fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (at most `within`) until `n` journal reads were sent: the follower sends a poll
    /// only after it printed the entries of the one before, so the first `n - 1` are printed.
    fn wait_for(&self, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.count() < n {
            assert!(
                Instant::now() < deadline,
                "{} journal reads within {within:?}, {n} expected",
                self.count()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
