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
    // Undo steps back over the last advance (the clock is frozen: it reads where it was).
    let undone = server.cli(&["clock", "undo", "cli-json", "--json"]).json();
    assert_eq!(
        undone["undone"]["advanced_to"], days["advanced_to"],
        "{undone}"
    );
    assert_eq!(undone["now"], days["advanced_from"], "{undone}");
    assert_eq!(undone["undo_left"], 1, "{undone}");
    let said = server.cli(&["clock", "undo", "cli-json"]);
    assert_eq!(said.code, 0, "{}", said.stderr);
    assert!(
        said.stdout.contains("undone: the clock reads")
            && said
                .stdout
                .contains("0 earlier advance(s) can still be undone"),
        "{}",
        said.stdout
    );
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
        server.cli(&["clock", "undo", "demo"]),
        6,
        "refused (409): tenant",
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

// ---- hostile servers ---------------------------------------------
//
// Small HTTP servers on loopback that answer what the sandbox never would: HTML, a JSON
// string, a redirect elsewhere, an answer without end, full pages without end, names full of
// control characters. The command line must exit 1 naming what came back, never print
// placeholders for credentials, never follow a redirect, stop reading past its bounds, and
// print control characters escaped.

mod hostile {
    use super::common::{cli_command, Run, ADMIN_KEY};
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::process::Stdio;
    use std::sync::Arc;
    use std::time::Duration;

    /// A request as a hostile server read it.
    pub struct Req {
        pub target: String,
        /// The request line and headers, as sent.
        pub head: String,
    }

    /// A server on a free loopback port answering each request with `answer` (a thread per
    /// connection, living until the test process ends); answers its base URL.
    pub fn serve(answer: impl Fn(&Req, &mut TcpStream) + Send + Sync + 'static) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let answer = answer.clone();
                std::thread::spawn(move || {
                    if let Some(req) = read_request(&mut stream) {
                        answer(&req, &mut stream);
                    }
                });
            }
        });
        base
    }

    fn read_request(stream: &mut TcpStream) -> Option<Req> {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = stream.read(&mut chunk).ok()?;
            if n == 0 || buf.len() > 1 << 20 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let length: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        let mut read = buf.len() - end;
        while read < length {
            let n = stream.read(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            read += n;
        }
        let target = head.split(' ').nth(1)?.to_string();
        Some(Req { target, head })
    }

    /// Writes a whole answer (`Connection: close`).
    pub fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut text = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (k, v) in headers {
            text.push_str(&format!("{k}: {v}\r\n"));
        }
        text.push_str("\r\n");
        let _ = stream.write_all(text.as_bytes());
        let _ = stream.write_all(body);
    }

    /// A 200 `application/json` answer of `body`.
    pub fn json(stream: &mut TcpStream, body: &str) {
        respond(
            stream,
            "200 OK",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
    }

    /// The longest a command against a hostile server may take before the test kills it.
    pub const LIMIT: Duration = Duration::from_secs(90);

    /// `sandbox ARGS` against `base` with the admin key, killed (and the test failed) when it
    /// runs past [`LIMIT`].
    pub fn cli(base: &str, args: &[&str]) -> Run {
        let child = cli_command()
            .args(args)
            .env("SANDBOX_URL", base)
            .env("SANDBOX_ADMIN_KEY", ADMIN_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run sandbox");
        let pid = child.id().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(LIMIT) {
            Ok(out) => Run::of(out.expect("wait")),
            Err(_) => {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid])
                    .status();
                panic!("sandbox {args:?} against {base} still ran after {LIMIT:?}: killed");
            }
        }
    }

    /// A created tenant as the sandbox answers it, with `api_key` and `password` as given.
    pub fn created(api_key: &str, password: &str) -> String {
        serde_json::json!({
            "id": "t_00000000000000aa",
            "name": "x",
            "time_zone": "UTC",
            "api_key": api_key,
            "basic": { "username": "x", "password": password },
            "created_at": "2026-11-27T00:00:00Z",
        })
        .to_string()
    }

    /// Tenant `i` (id `t_` and `i` in 16 hex digits) named `name`, as the sandbox shows it.
    pub fn tenant(i: usize, name: &str) -> serde_json::Value {
        serde_json::json!({
            "id": format!("t_{i:016x}"),
            "name": name,
            "time_zone": "UTC",
            "created_at": "2026-11-27T00:00:00Z",
        })
    }

    /// A page of the `n` tenants from `first`, tenant `i` named `name(i)`.
    pub fn tenants(first: usize, n: usize, name: impl Fn(usize) -> String) -> String {
        let items: Vec<serde_json::Value> =
            (first..first + n).map(|i| tenant(i, &name(i))).collect();
        serde_json::Value::Array(items).to_string()
    }

    /// No control character but the line ends.
    pub fn printable(text: &str) -> bool {
        !text.chars().any(|c| c.is_control() && c != '\n')
    }
}

#[test]
fn answers_that_are_not_the_sandboxs_exit_1_naming_what_came_back() {
    use hostile::{cli, json, respond, serve};
    let expect_1 = |run: &Run, needles: &[&str]| {
        assert_eq!(
            run.code, 1,
            "stdout: {}\nstderr: {}",
            run.stdout, run.stderr
        );
        assert!(run.stdout.is_empty(), "nothing on stdout: {}", run.stdout);
        for needle in needles {
            assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
        }
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    };
    // An HTML page (a proxy's, a web server's) where the created tenant belongs.
    let html = serve(|_, s| {
        respond(
            s,
            "200 OK",
            &[("Content-Type", "text/html; charset=utf-8")],
            b"<html><body>Welcome to nginx!</body></html>",
        )
    });
    let run = hostile::cli(&html, &["tenant", "create", "x", "--env"]);
    expect_1(&run, &["200", "text/html", "<html><body>Welcome to nginx!"]);
    assert!(!run.stdout.contains("'-'"), "{}", run.stdout);
    expect_1(&cli(&html, &["tenant", "create", "x"]), &["text/html"]);
    expect_1(&cli(&html, &["tenant", "list"]), &["text/html"]);
    // A JSON string.
    let string = serve(|_, s| json(s, "\"created\""));
    expect_1(
        &cli(&string, &["tenant", "create", "x", "--env"]),
        &["200", "application/json", "\"created\""],
    );
    expect_1(
        &cli(&string, &["tenant", "create", "x", "--json"]),
        &["\"created\""],
    );
    // An object without the credentials: the missing member is named.
    let partial = serve(|_, s| json(s, r#"{"id":"t_00000000000000aa","name":"x"}"#));
    expect_1(
        &cli(&partial, &["tenant", "create", "x", "--env"]),
        &["api_key"],
    );
    // An object where the list of tenants belongs.
    let object = serve(|_, s| json(s, r#"{"tenants":[]}"#));
    expect_1(&cli(&object, &["tenant", "list"]), &["{\"tenants\":[]}"]);
    // An ill-typed member (the clock's mode a number) and an empty 200.
    let clock = serve(|req, s| {
        if req.target.ends_with("/clock") {
            json(s, r#"{"mode":5,"now":"2026-11-27T00:00:00Z"}"#)
        } else {
            json(s, &hostile::tenant(0xaa, "x").to_string())
        }
    });
    expect_1(
        &cli(&clock, &["clock", "show", "t_00000000000000aa"]),
        &["mode"],
    );
    let empty = serve(|_, s| respond(s, "200 OK", &[], b""));
    expect_1(
        &cli(&empty, &["tenant", "token", "t_00000000000000aa"]),
        &["200"],
    );
}

#[test]
fn a_redirect_is_not_followed_and_the_admin_key_stays_home() {
    use hostile::{respond, serve};
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = heard.clone();
    let elsewhere = serve(move |req, s| {
        record.lock().unwrap().push(req.head.clone());
        hostile::json(s, &hostile::created("sbx_stolen", "pw"))
    });
    let location = format!("{elsewhere}/sandbox/v1/tenants");
    let target = location.clone();
    let redirecting =
        serve(move |_, s| respond(s, "307 Temporary Redirect", &[("Location", &target)], b""));
    let run = hostile::cli(&redirecting, &["tenant", "create", "x", "--env"]);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("307"), "{}", run.stderr);
    assert!(run.stderr.contains(&location), "{}", run.stderr);
    let run = hostile::cli(&redirecting, &["tenant", "list"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        *heard.lock().unwrap(),
        Vec::<String>::new(),
        "the second server heard nothing"
    );
}

#[test]
fn an_answer_without_end_is_cut_off_at_its_bound() {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    // The server stops by itself at 160 MiB, so that a command line reading without bound
    // fails the test instead of the machine.
    const CAP: u64 = 160 << 20;
    let streamed = Arc::new(AtomicU64::new(0));
    let counter = streamed.clone();
    let endless = hostile::serve(move |req, s| {
        // The tenant itself, so that `fixtures export` gets as far as the document.
        if req.target.ends_with("/tenants/t_00000000000000aa") {
            return hostile::json(s, &hostile::tenant(0xaa, "x").to_string());
        }
        counter.store(0, Ordering::SeqCst);
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n";
        if s.write_all(head.as_bytes()).is_err() {
            return;
        }
        // JSON whitespace: a valid beginning of an array that never ends.
        let mut chunk = format!("{:x}\r\n", 64 * 1024).into_bytes();
        chunk.extend(std::iter::repeat_n(b' ', 64 * 1024));
        chunk.extend_from_slice(b"\r\n");
        while counter.load(Ordering::SeqCst) < CAP {
            if s.write_all(&chunk).is_err() {
                return;
            }
            counter.fetch_add(64 * 1024, Ordering::SeqCst);
        }
    });
    let run = hostile::cli(&endless, &["tenant", "list"]);
    let sent = streamed.load(Ordering::SeqCst);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(run.stderr.contains("4 MiB"), "{}", run.stderr);
    assert!(
        sent < 32 << 20,
        "stopped reading near 4 MiB, the server sent {sent} bytes"
    );
    // A fixtures export may be larger: 64 MiB.
    let run = hostile::cli(&endless, &["fixtures", "export", "t_00000000000000aa"]);
    let sent = streamed.load(Ordering::SeqCst);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(run.stderr.contains("64 MiB"), "{}", run.stderr);
    assert!(
        sent < 96 << 20,
        "stopped reading near 64 MiB, the server sent {sent} bytes"
    );
}

#[test]
fn full_pages_without_end_stop_the_listing() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    // Both servers give up after 1,100 pages (500), so that a command line that loops fails
    // the test instead of running on.
    const CAP: usize = 1_100;
    // The same full page again and again.
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let same = hostile::serve(move |_, s| {
        if count.fetch_add(1, Ordering::SeqCst) >= CAP {
            hostile::respond(s, "500 Internal Server Error", &[], b"");
        } else {
            hostile::json(s, &hostile::tenants(0, 100, |i| format!("n{i}")));
        }
    });
    let run = hostile::cli(&same, &["tenant", "list"]);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("kept returning full pages"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("again"), "{}", run.stderr);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "stopped at the repeated page"
    );
    // Fresh full pages without end: stopped after the most pages a listing reads (1,000).
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let fresh = hostile::serve(move |_, s| {
        let page = count.fetch_add(1, Ordering::SeqCst);
        if page >= CAP {
            hostile::respond(s, "500 Internal Server Error", &[], b"");
        } else {
            hostile::json(s, &hostile::tenants(page * 100, 100, |i| format!("n{i}")));
        }
    });
    let run = hostile::cli(&fresh, &["tenant", "show", "nobody"]);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("kept returning full pages"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("1000 pages"), "{}", run.stderr);
    assert_eq!(asked.load(Ordering::SeqCst), 1_000);
}

#[test]
fn control_characters_from_the_server_are_printed_escaped() {
    use hostile::{json, printable, respond, serve};
    let names = [
        "red\u{1b}[31mX",
        "title\u{1b}]0;pwned\u{7}",
        "csi\u{9b}2J",
        "del\u{7f}",
        "two\nlines",
    ];
    let page = hostile::tenants(0, names.len(), |i| names[i].to_string());
    let one = hostile::tenant(0, names[0]).to_string();
    let list = serve(move |req, s| {
        if req.target.contains("/tenants/t_") {
            json(s, &one)
        } else {
            json(s, &page)
        }
    });
    // A table: escaped, one line per tenant.
    let run = hostile::cli(&list, &["tenant", "list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(printable(&run.stdout), "{:?}", run.stdout);
    assert!(run.stdout.contains(r"red\u{1b}[31mX"), "{}", run.stdout);
    assert!(run.stdout.contains(r"csi\u{9b}2J"), "{}", run.stdout);
    assert!(run.stdout.contains(r"del\u{7f}"), "{}", run.stdout);
    assert!(run.stdout.contains(r"two\u{a}lines"), "{}", run.stdout);
    assert_eq!(
        run.stdout.lines().count(),
        1 + names.len(),
        "{}",
        run.stdout
    );
    let run = hostile::cli(&list, &["tenant", "show", "t_0000000000000000"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(printable(&run.stdout), "{:?}", run.stdout);
    // --json: valid JSON naming the same strings, every control character escaped in it.
    let run = hostile::cli(&list, &["tenant", "list", "--json"]);
    assert!(printable(&run.stdout), "{:?}", run.stdout);
    let listed: Vec<String> = run
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect();
    assert_eq!(listed, names);
    // A refusal's message, and an answer that is not JSON, on stderr.
    let refusing = serve(|_, s| {
        respond(
            s,
            "400 Bad Request",
            &[("Content-Type", "application/json")],
            br#"{"code":"BAD","message":"bad \u001b]0;pwned\u0007 name"}"#,
        )
    });
    let run = hostile::cli(&refusing, &["tenant", "create", "x"]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert!(printable(&run.stderr), "{:?}", run.stderr);
    assert!(
        run.stderr.contains(r"bad \u{1b}]0;pwned\u{7} name"),
        "{}",
        run.stderr
    );
    let html = serve(|_, s| {
        respond(
            s,
            "200 OK",
            &[("Content-Type", "text/html")],
            b"<h1>\x1b[2J\x9b</h1>",
        )
    });
    let run = hostile::cli(&html, &["tenant", "list"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(printable(&run.stderr), "{:?}", run.stderr);
    assert!(run.stderr.contains(r"<h1>\u{1b}[2J"), "{}", run.stderr);
    // A created tenant's human summary, and a journal line.
    let creating = serve(|_, s| {
        let mut body: serde_json::Value =
            serde_json::from_str(&hostile::created("sbx_1", "pw")).unwrap();
        body["name"] = "x\u{1b}[8m".into();
        json(s, &body.to_string())
    });
    let run = hostile::cli(&creating, &["tenant", "create", "x"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(printable(&run.stdout), "{:?}", run.stdout);
    assert!(run.stdout.contains(r"x\u{1b}[8m"), "{}", run.stdout);
    let journal = serve(|req, s| {
        if req.target.contains("/requests") {
            json(
                s,
                &serde_json::json!([{
                    "id": "1764201600000-e-1",
                    "time": "2026-11-27T00:00:00Z",
                    "method": "GET",
                    "path": "/billing/\u{1b}[2J",
                    "query": null,
                    "status": 200,
                    "duration_ms": 1.5,
                    "fault": null,
                }])
                .to_string(),
            )
        } else {
            json(s, &hostile::tenant(0, "x").to_string())
        }
    });
    let run = hostile::cli(&journal, &["requests", "t_0000000000000000"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(printable(&run.stdout), "{:?}", run.stdout);
    assert!(run.stdout.contains(r"/billing/\u{1b}[2J"), "{}", run.stdout);
    // Credentials with control characters are not the sandbox's: refused, not printed.
    let bad_key = serve(|_, s| json(s, &hostile::created("sbx_\u{1b}[2J", "pw")));
    let run = hostile::cli(&bad_key, &["tenant", "create", "x", "--env"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.is_empty(), "{:?}", run.stdout);
    assert!(printable(&run.stderr), "{:?}", run.stderr);
}

#[test]
fn env_lines_stay_quoted_whatever_the_server_answers() {
    let quoting = hostile::serve(|_, s| {
        hostile::json(
            s,
            &hostile::created("sbx_'$(touch pwned)'`touch pwned`", "p'w\"$HOME;x"),
        )
    });
    let dir = tempfile::tempdir().expect("dir");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"eval "$("$SANDBOX" tenant create x --env)" && printf '%s\n%s\n' "$SANDBOX_API_KEY" "$SANDBOX_BASIC""#)
        .current_dir(dir.path())
        .env("SANDBOX", env!("CARGO_BIN_EXE_sandbox"))
        .env("SANDBOX_URL", &quoting)
        .env("SANDBOX_ADMIN_KEY", ADMIN_KEY)
        .output()
        .expect("sh");
    let run = Run::of(out);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "sbx_'$(touch pwned)'`touch pwned`\nx:p'w\"$HOME;x\n"
    );
    assert!(!dir.path().join("pwned").exists(), "nothing ran");
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

/// The `Commands:` of a help text: (name, description) per line, `help` left out.
fn listed_commands(help: &str) -> Vec<(String, String)> {
    section(help, "Commands:")
        .iter()
        .filter_map(|l| {
            let l = l.trim_start();
            let (name, text) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (name != "help" && !name.is_empty()).then(|| (name.to_string(), text.trim().into()))
        })
        .collect()
}

/// The `--flags` an `Options:` (or `Arguments:`) section lists.
fn listed_flags(help: &str) -> Vec<String> {
    section(help, "Options:")
        .iter()
        .flat_map(|l| flags_in(l.split("  ").find(|p| p.contains("--")).unwrap_or("")))
        .collect()
}

/// The entry lines of section `title` of a help text: the indented lines after it, up to the
/// next line that is not indented (a long help puts blank lines between entries and their
/// descriptions on lines indented further, which are left out).
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| l.trim() != title)
        .skip(1)
        .take_while(|l| l.trim().is_empty() || l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("          "))
        .collect()
}

/// Every `--flag` written in `text`.
fn flags_in(text: &str) -> Vec<String> {
    text.match_indices("--")
        .filter(|(i, _)| *i == 0 || !text.as_bytes()[i - 1].is_ascii_alphanumeric())
        .map(|(i, _)| {
            text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|f| f.len() > 2 && f.as_bytes()[2].is_ascii_alphabetic())
        .collect()
}

/// Every help text of the command line, by the words that reach it (`[]` the top one,
/// `["tenant", "create"]`), walked from the command list `sandbox --help` itself prints.
fn every_help() -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(words) = queue.pop() {
        let mut args = vec!["help".to_string()];
        args.extend(words.iter().cloned());
        let run = Run::of(cli_command().args(&args).output().expect("run sandbox"));
        assert_eq!(run.code, 0, "sandbox {args:?}: {}", run.stderr);
        for (name, _) in listed_commands(&run.stdout) {
            let mut next = words.clone();
            next.push(name);
            queue.push(next);
        }
        out.push((words, run.stdout));
    }
    out
}

#[test]
fn every_help_text_names_only_commands_and_flags_that_exist() {
    let helps = every_help();
    // The CLI's own tables: each command's subcommands and its flags.
    let mut commands: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut flags: std::collections::HashSet<String> = Default::default();
    for (words, text) in &helps {
        let names = listed_commands(text).into_iter().map(|(n, _)| n).collect();
        commands.insert(words.join(" "), names);
        flags.extend(listed_flags(text));
    }
    assert!(
        commands[""].contains(&"fixtures".to_string()) && flags.contains("--clock"),
        "{commands:?} {flags:?}"
    );
    assert!(helps.len() > 20, "{} help texts", helps.len());
    for (words, text) in &helps {
        let at = format!("sandbox help {}", words.join(" "));
        // Flags: each one written anywhere is one some command takes.
        for flag in flags_in(text) {
            assert!(flags.contains(&flag), "{at}: {flag} is no flag\n{text}");
        }
        // Commands: `word sub ...` in backticks names a command and one of its subcommands.
        for quoted in text.split('`').skip(1).step_by(2) {
            let mut parts = quoted
                .split_whitespace()
                .skip_while(|w| *w == "sandbox")
                .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            let (Some(first), Some(second)) = (parts.next(), parts.next()) else {
                continue;
            };
            if let Some(subs) = commands.get(first).filter(|s| !s.is_empty()) {
                assert!(
                    subs.contains(&second.to_string()),
                    "{at}: `{quoted}` names no command\n{text}"
                );
            }
        }
        // No help calls one of the commands it lists unavailable.
        for (name, _) in listed_commands(text) {
            for claim in [
                format!("{name} is not available"),
                format!("{name} is unavailable"),
            ] {
                assert!(!text.contains(&claim), "{at}: says '{claim}'\n{text}");
            }
        }
    }
}

#[test]
fn tenant_create_sets_the_clock_first_and_dry_runs_create_and_apply_nothing() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("doc.json");
    std::fs::write(
        &file,
        r#"{"products": [{"id": 1, "name": "Compute"}],
            "billing_accounts": [{"id": 1, "account_num": "C-1", "name": "Clocked",
                                  "currency_code": "USD", "start_date": "now-1M/month"}]}"#,
    )
    .expect("write");
    let file = file.to_str().expect("utf-8 path");
    // A dry run: what would be created, and nothing is.
    let dry = server
        .cli(&[
            "tenant",
            "create",
            "clocked",
            "--fixtures",
            file,
            "--clock",
            "2030-03-15",
            "--dry-run",
            "--json",
        ])
        .json();
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(
        dry["created"],
        serde_json::json!({"products": 1, "billing_accounts": 1}),
        "{dry}"
    );
    let shown = server.cli(&["tenant", "show", "clocked"]);
    assert_eq!(shown.code, 5, "{}", shown.stdout);
    let table = server.cli(&[
        "tenant",
        "create",
        "clocked",
        "--fixtures",
        file,
        "--dry-run",
    ]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("would be created") && table.stdout.contains("products 1"),
        "{}",
        table.stdout
    );
    // For real: the clock is frozen at the instant before the records are written, so the
    // relative start date resolves against it (2030), not against real time.
    let created = server
        .cli(&[
            "tenant",
            "create",
            "clocked",
            "--fixtures",
            file,
            "--clock",
            "2030-03-15T00:00:00Z",
            "--json",
        ])
        .json();
    assert_eq!(created["name"], "clocked", "{created}");
    let clock = server.cli(&["clock", "show", "clocked", "--json"]).json();
    assert_eq!(clock["mode"], "frozen", "{clock}");
    assert!(
        clock["now"]
            .as_str()
            .unwrap_or("")
            .starts_with("2030-03-15"),
        "{clock}"
    );
    let exported = server.cli(&["fixtures", "export", "clocked"]).json();
    let start = exported["billing_accounts"][0]["start_date"]
        .as_str()
        .unwrap_or("");
    assert!(start.starts_with("2030-02-01"), "{exported}");
    let bad = server.cli(&[
        "tenant",
        "create",
        "bad-clock",
        "--fixtures",
        file,
        "--clock",
        "soon",
    ]);
    assert_eq!(bad.code, 6, "{}", bad.stderr);
    assert!(bad.stderr.contains("frozen_at"), "{}", bad.stderr);
    // fixtures apply --dry-run: reported, nothing changed.
    let more = dir.path().join("more.json");
    std::fs::write(
        &more,
        r#"{"products": [{"name": "Storage"}, {"id": 1, "name": "Compute 2"}]}"#,
    )
    .expect("write");
    let more = more.to_str().expect("utf-8 path");
    let dry = server.cli(&["fixtures", "apply", "clocked", more, "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("creating products 1; updating products 1"),
        "{}",
        dry.stdout
    );
    assert_eq!(
        server.cli(&["fixtures", "export", "clocked"]).json(),
        exported
    );
}

#[test]
fn policy_show_and_set_read_and_change_the_tenants_billing_policy() {
    let server = Server::start();
    let shown = server.cli(&["policy", "show", "demo", "--json"]).json();
    assert_eq!(shown["recurring_timing"], "ARREARS", "{shown}");
    assert_eq!(shown["payment_term_days"], 30, "{shown}");
    let set = server
        .cli(&[
            "policy",
            "set",
            "demo",
            "proration=NONE",
            "payment_term_days=15",
            "autopay_retry_days=1,3",
            "--json",
        ])
        .json();
    assert_eq!(set["proration"], "NONE", "{set}");
    assert_eq!(set["payment_term_days"], 15, "{set}");
    assert_eq!(
        set["autopay_retry_days"],
        serde_json::json!([1, 3]),
        "{set}"
    );
    let table = server.cli(&["policy", "show", "demo"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("payment_term_days") && table.stdout.contains("1,3"),
        "{}",
        table.stdout
    );
    // The server's refusal names the member and its allowed values (exit 6); a pair that is
    // not key=value is a usage error (exit 2); nothing changed.
    let refused = server.cli(&["policy", "set", "demo", "proration=HOURLY"]);
    assert_eq!(refused.code, 6, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("proration: 'HOURLY' is not one of BY_DAY, NONE"),
        "{}",
        refused.stderr
    );
    let usage = server.cli(&["policy", "set", "demo", "proration"]);
    assert_eq!(usage.code, 2, "{}", usage.stderr);
    let after = server.cli(&["policy", "show", "demo", "--json"]).json();
    assert_eq!(after, set);
}
