//! The web console in a real browser: headless Chromium driven by chromedriver over the W3C
//! WebDriver protocol (plain HTTP + JSON, spoken here with reqwest), against the real
//! `sandbox serve` binary. Open with the admin key in the fragment, create a tenant, post
//! usage through the API and see it in the journal and in the chart's data, advance the
//! clock and see what it did (the timeline of its transitions, the invoice table, the bill
//! runs, each against the API), undo it, restore a checkpoint, delete the tenant. Screenshots go to
//! target/console-screenshots/ for a person to look at.
//!
//! Chromium and chromedriver are Debian packages (`apt-get install chromium chromium-driver`,
//! which tests/setup.sh does, run by `make test`); without them this test fails saying so, it
//! never skips.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

mod common;

use common::{Server, ADMIN_KEY};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
const WAIT: Duration = Duration::from_secs(20);

/// The first of `names` found on PATH (or given by `var`), else a failure saying how to
/// install it.
fn program(var: &str, names: &[&str]) -> PathBuf {
    if let Some(p) = std::env::var_os(var) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "the console test needs {names:?} (or {var}=path): install Chromium and its driver, \
         e.g. `apt-get update && apt-get install -y chromium chromium-driver` (what `make test` \
         does through tests/setup.sh)"
    );
}

/// A chromedriver process and one headless Chromium session.
struct Browser {
    driver: Child,
    http: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Ends the session first (`DELETE /session/{id}`: chromedriver closes Chromium), then
    /// stops chromedriver. Killing chromedriver alone left its Chromium running after every
    /// test run, orphaned. Synchronous (a drop cannot await), over a plain TCP request, so it
    /// runs on a panic too.
    fn drop(&mut self) {
        let _ = end_session(&self.session);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `DELETE <session>` (an `http://host:port/session/id` URL) with a 10 s bound; the answer
/// is read to its end, so chromedriver has closed the browser when this returns.
fn end_session(session: &str) -> std::io::Result<()> {
    use std::io::{Read, Write};
    let rest = session.strip_prefix("http://").unwrap_or(session);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream = std::net::TcpStream::connect(host)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    Ok(())
}

impl Browser {
    async fn start() -> Browser {
        let chromium = program(
            "CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        );
        let chromedriver = program("CHROMEDRIVER", &["chromedriver"]);
        let port = common::free_port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().expect("profile dir");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready {
                let v: Value = r.json().await.unwrap_or_default();
                if v["value"]["ready"] == true {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1400",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let r: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("session JSON");
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_string();
        Browser {
            driver,
            http,
            session: format!("{base}/session/{session}"),
            _profile: profile,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let v: Value = req
            .send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("json");
        if v["value"]["error"].is_string() {
            panic!("webdriver {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// Runs `script` (a function body; `arguments` as given) and answers its value.
    async fn js(&self, script: &str, args: Value) -> Value {
        let body = json!({ "script": script, "args": args });
        self.call(reqwest::Method::POST, "/execute/sync", Some(body))
            .await
    }

    /// Waits until `expr` (a JavaScript expression) is truthy; answers its value.
    async fn wait(&self, what: &str, expr: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self
                .js(
                    &format!("try {{ return ({expr}); }} catch (e) {{ return null; }}"),
                    json!([]),
                )
                .await;
            if !(v.is_null() || v == false || v == "" || v == 0) {
                return v;
            }
            if Instant::now() > deadline {
                let status = self
                    .js(
                        "return document.querySelector('#status').textContent",
                        json!([]),
                    )
                    .await;
                panic!("waited {WAIT:?} for {what} ({expr}); status line: {status}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn element(&self, css: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/clear"),
            Some(json!({})),
        )
        .await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Saves what the window shows, `css` scrolled to the top, as `<name>.png`.
    async fn screenshot(&self, name: &str, css: &str) {
        use base64::Engine;
        let scroll = "document.querySelector(arguments[0]).scrollIntoView()";
        self.js(scroll, json!([css])).await;
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("base64"))
            .expect("png");
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
    }
}

/// target/console-screenshots/ (the test runs from target/<profile>/deps/).
fn screenshots_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<exe>")
        .to_path_buf();
    target.join("console-screenshots")
}

/// An admin API call of the test itself (to check the page against the API).
async fn admin(server: &Server, method: reqwest::Method, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .request(method, format!("{}/sandbox/v1{path}", server.base))
        .header("X-Admin-Key", ADMIN_KEY)
        .send()
        .await
        .expect("admin call")
}

/// The tenant's invoices as Surface A lists them (HTTP Basic `basic` = `user:password`),
/// oldest first: each element's attributes.
async fn invoices(server: &Server, basic: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let (user, password) = basic.split_once(':').expect("user:password");
    let xml = reqwest::Client::new()
        .get(format!("{}/t/s/r/1.28/invoices?pageSize=500", server.base))
        .basic_auth(user, Some(password))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut out: Vec<std::collections::BTreeMap<String, String>> = xml
        .split("<invoice ")
        .skip(1)
        .map(|rest| {
            let head = &rest[..rest.find('>').expect("a tag's end")];
            head.split('"')
                .collect::<Vec<_>>()
                .chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| {
                    let name = c[0].trim().trim_end_matches('=').to_string();
                    (name, c[1].to_string())
                })
                .collect()
        })
        .collect();
    out.sort_by_key(|i| i["eid"].parse::<i64>().unwrap());
    out
}

/// The tenant's clock as the admin API answers it.
async fn read_clock(server: &Server, tenant: &str) -> Value {
    let path = format!("/tenants/{tenant}/clock");
    let r = admin(server, reqwest::Method::GET, &path).await;
    r.json().await.expect("clock JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_runs_a_tenant_through_its_life_in_a_real_browser() {
    let server = Server::start();
    let browser = Browser::start().await;

    // The key in the fragment: kept in session storage, dropped from the address.
    browser
        .goto(&format!(
            "{}/sandbox/console#admin_key={ADMIN_KEY}",
            server.base
        ))
        .await;
    browser
        .wait(
            "the tenant list",
            "document.querySelector('#tenants tr[data-tenant-name=\"demo\"]')",
        )
        .await;
    let (hash, stored) = {
        let v = browser
            .js(
                "return [location.hash, sessionStorage.getItem('sandbox.admin_key')]",
                json!([]),
            )
            .await;
        (v[0].clone(), v[1].clone())
    };
    assert_eq!(hash, "", "the key leaves the address bar");
    assert_eq!(stored, ADMIN_KEY);
    browser.screenshot("01-tenants", "header").await;

    // Create a tenant: credentials shown once, and the tenant opened.
    browser.type_into("#create-name", "console-e2e").await;
    browser.click("#create-submit").await;
    let api_key = browser
        .wait(
            "the credentials",
            "document.querySelector('#created-api-key').textContent",
        )
        .await;
    let api_key = api_key.as_str().unwrap().to_string();
    assert!(api_key.starts_with("sbx_"), "{api_key}");
    let tenant = browser
        .wait(
            "the opened tenant",
            "document.querySelector('#tenant-panel').dataset.tenantId",
        )
        .await;
    let tenant = tenant.as_str().unwrap().to_string();
    let curl = browser
        .js(
            "return document.querySelector('#created-curl').textContent",
            json!([]),
        )
        .await;
    assert!(curl.as_str().unwrap().contains(&api_key));
    browser
        .wait(
            "the clock",
            "document.querySelector('#clock-now').textContent",
        )
        .await;

    // Post usage through the API: three events two days before the tenant clock, two ten
    // days before.
    let clock = read_clock(&server, &tenant).await;
    let now = chrono::DateTime::parse_from_rfc3339(clock["now"].as_str().unwrap()).unwrap();
    let at = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339();
    let events: Vec<Value> = [(2, 3), (2, 5), (2, 7), (10, 11), (10, 13)]
        .iter()
        .map(|(days, hours)| {
            json!({"start_time": at(*days), "service_resource_identifier": "srv-compute-0001",
                   "usage_uom": "HOUR", "usage_amount": hours})
        })
        .collect();
    let posted: Value = reqwest::Client::new()
        .post(format!("{}/billing/2/usage-events/bulk", server.base))
        .header("X-Api-Key", &api_key)
        .json(&json!({"mode": "FAIL_ON_EXISTING", "usage_events": events}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rated = posted["rated_events"].as_array().expect("rated");
    assert_eq!(rated.len(), 5, "{posted}");
    // The expected bars: the answer's charges summed per start date (as the tenant renders it).
    let mut per_day: std::collections::BTreeMap<String, Micros> = Default::default();
    for e in rated {
        let day = e["start_time"].as_str().unwrap()[..10].to_string();
        per_day.entry(day).or_default().add(&e["total_charge"]);
    }

    // The journal shows the post; its row opens the request and the pretty answer.
    browser
        .wait(
            "the post in the journal",
            "[...document.querySelectorAll('#journal tbody tr')].find(r => r.textContent.includes('/billing/2/usage-events/bulk'))",
        )
        .await;
    browser
        .js(
            "[...document.querySelectorAll('#journal tbody tr')].find(r => r.textContent.includes('/billing/2/usage-events/bulk')).click()",
            json!([]),
        )
        .await;
    let answer = browser
        .wait(
            "the answer",
            "document.querySelector('#detail-response').textContent",
        )
        .await;
    let answer = answer.as_str().unwrap();
    assert!(
        answer.contains("\"rated_events\": ["),
        "pretty JSON: {answer}"
    );
    assert!(answer.contains("\n  "), "indented: {answer}");
    // The page's own Surface A reads are journaled too: their XML answers come indented.
    browser
        .js(
            "[...document.querySelectorAll('#journal tbody tr')].find(r => r.textContent.includes('/t/s/r/1.28/billingAccounts')).click()",
            json!([]),
        )
        .await;
    let xml = browser
        .wait(
            "the XML answer",
            "document.querySelector('#detail-response').textContent.includes('<billingAccounts') && document.querySelector('#detail-response').textContent",
        )
        .await;
    assert!(
        xml.as_str().unwrap().contains("\n  <billingAccount "),
        "indented XML: {xml}"
    );
    browser.screenshot("02-journal", "#journal-card").await;

    // The chart's data: each day's bar is the sum of that day's charges.
    browser.click("#data-refresh").await;
    for (day, sum) in &per_day {
        let expr = format!(
            "(() => {{ const r = document.querySelector('#chart rect[data-day=\"{day}\"]'); return r && Number(r.dataset.events) > 0 ? r.dataset.total : null; }})()"
        );
        let total = browser.wait(&format!("the bar of {day}"), &expr).await;
        assert_eq!(
            sum.micros(),
            micros(total.as_str().unwrap()),
            "bar of {day}"
        );
    }
    let events_in_chart = browser
        .wait(
            "the chart",
            "document.querySelector('#chart svg').dataset.events",
        )
        .await;
    assert_eq!(events_in_chart, "5");
    let recent = browser
        .js(
            "return document.querySelectorAll('#usage-recent tbody tr').length",
            json!([]),
        )
        .await;
    assert_eq!(recent, 5);
    browser.screenshot("03-chart", "#tenant-panel").await;

    // A checkpoint, then a month forward (the page computes the same wall time a month on).
    browser.type_into("#checkpoint-name", "before-month").await;
    browser.click("#checkpoint-create").await;
    browser
        .wait(
            "the checkpoint",
            "document.querySelector('#checkpoints tr[data-checkpoint=\"before-month\"]')",
        )
        .await;
    let before = browser
        .js(
            "return document.querySelector('#clock-card').dataset.now",
            json!([]),
        )
        .await;
    let basic = browser
        .js(
            "return document.querySelector('#created-basic').textContent",
            json!([]),
        )
        .await;
    let basic = basic.as_str().unwrap().to_string();
    let invoices_before = invoices(&server, &basic).await;
    browser.click("#clock-month").await;
    let advanced = browser
        .wait("the advance", "document.querySelector('#clock-advanced') && document.querySelector('#clock-advanced').textContent")
        .await;
    let clock = read_clock(&server, &tenant).await;
    assert_eq!(clock["mode"], "offset", "a running clock runs on ahead");
    let before = chrono::DateTime::parse_from_rfc3339(before.as_str().unwrap()).unwrap();
    let after = chrono::DateTime::parse_from_rfc3339(clock["now"].as_str().unwrap()).unwrap();
    let month = before.checked_add_months(chrono::Months::new(1)).unwrap();
    assert!(
        after >= month && after - month < chrono::Duration::minutes(5),
        "{before} -> {after}"
    );
    let shown = browser
        .js("return [document.querySelector('#clock-mode').textContent, document.querySelectorAll('#clock-transitions li').length]", json!([]))
        .await;
    assert_eq!(shown[0], "offset");
    assert!(advanced
        .as_str()
        .unwrap()
        .contains(&format!("{} transition(s)", shown[1])));

    // The lifecycle. The timeline shows the transitions the advance ran, as the admin API
    // answered them (the journal keeps the advance's answer).
    let journal: Value = admin(
        &server,
        reqwest::Method::GET,
        &format!("/tenants/{tenant}/requests?path=*/clock/advance&status=200"),
    )
    .await
    .json()
    .await
    .unwrap();
    let answer: Value =
        serde_json::from_str(journal[0]["response_body"].as_str().expect("the answer")).unwrap();
    let ran: Vec<Value> = answer["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .map(|t| json!([t["kind"], t["at"], t["id"].to_string()]))
        .collect();
    let timeline = browser
        .wait(
            "the timeline",
            "document.querySelector('#timeline-list li.advance:last-child') && [...document.querySelectorAll('#timeline-list li.advance:last-child li[data-kind]')].map(li => [li.dataset.kind, li.dataset.at, li.dataset.id])",
        )
        .await;
    assert_eq!(timeline, json!(ran), "the timeline of the advance");
    let dots = browser
        .js(
            "return document.querySelector('#timeline svg').dataset.transitions",
            json!([]),
        )
        .await;
    assert_eq!(dots, ran.len().to_string());
    // The invoice table is Surface A's invoice list (status, amount, due and paid dates).
    let after = invoices(&server, &basic).await;
    let expected: Vec<Value> = after
        .iter()
        .map(|i| {
            let day = |name: &str| {
                i.get(name)
                    .filter(|d| d.len() >= 10)
                    .map(|d| d[..10].to_string())
                    .unwrap_or_else(|| "-".to_string())
            };
            json!([
                i["eid"],
                i["status"],
                i["amount"],
                day("dueDate"),
                day("paidDate")
            ])
        })
        .collect();
    let table = browser
        .wait(
            "the invoice table",
            &format!("document.querySelectorAll('#invoices tbody tr').length === {} && [...document.querySelectorAll('#invoices tbody tr')].map(tr => [tr.dataset.invoice, tr.dataset.status, tr.children[3].textContent, tr.children[6].textContent, tr.children[7].textContent]).sort((a, b) => Number(a[0]) - Number(b[0]))", after.len()),
        )
        .await;
    assert_eq!(table, json!(expected), "the invoice table");
    // Bill runs: one row per run of Surface B's bill batches.
    let batches: Value = reqwest::Client::new()
        .get(format!(
            "{}/billing/2/bill-batches?expand=bill_batch_runs",
            server.base
        ))
        .header("X-Api-Key", &api_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let runs: usize = batches
        .as_array()
        .expect("batches")
        .iter()
        .map(|b| b["bill_batch_runs"].as_array().map_or(0, Vec::len))
        .sum();
    let shown = browser
        .wait(
            "the bill runs",
            "document.querySelectorAll('#billruns tbody tr').length",
        )
        .await;
    assert_eq!(shown, runs.max(1), "a row per run (or 'no run yet')");
    browser.screenshot("04-advanced", "#tenant-panel").await;
    browser.screenshot("04-lifecycle", "#chart-card").await;

    // Undo: the tenant as before the advance (clock and invoices), the advance struck in the
    // timeline.
    browser.click("#clock-undo").await;
    browser
        .wait(
            "the undo",
            "document.querySelector('#clock-undone') && document.querySelector('#clock-undone').textContent",
        )
        .await;
    let clock = read_clock(&server, &tenant).await;
    assert_eq!(clock["mode"], "real", "the clock of before the advance");
    assert_eq!(invoices(&server, &basic).await, invoices_before);
    browser
        .wait(
            "the advance struck",
            &format!("document.querySelector('#timeline-list li.advance:last-child.undone') && document.querySelectorAll('#invoices tbody tr').length === {}", invoices_before.len()),
        )
        .await;
    browser.screenshot("05-undone", "#tenant-panel").await;

    // Restore the checkpoint: the clock is back to real time, the usage still there.
    browser
        .click("#checkpoints tr[data-checkpoint=\"before-month\"] button.restore")
        .await;
    // (The undo left the clock real already: the status line says when the restore and the
    // page's reload are done.)
    browser
        .wait(
            "the restore",
            "document.querySelector('#status').textContent === 'restoring before-month: done' && document.querySelector('#clock-mode').textContent === 'real'",
        )
        .await;
    let clock = read_clock(&server, &tenant).await;
    assert_eq!(clock["mode"], "real");
    browser
        .wait(
            "the chart after the restore",
            "document.querySelector('#chart svg').dataset.events === '5'",
        )
        .await;

    // Fork the checkpoint: a new tenant, opened, holding the checkpoint's five events.
    browser
        .click("#checkpoints tr[data-checkpoint=\"before-month\"] button.fork")
        .await;
    browser.type_into("#create-name", "console-fork").await;
    browser.click("#create-submit").await;
    let fork = browser
        .wait(
            "the fork opened",
            &format!("(() => {{ const id = document.querySelector('#tenant-panel').dataset.tenantId; return id !== '{tenant}' && id; }})()"),
        )
        .await;
    let fork = fork.as_str().unwrap().to_string();
    let record: Value = admin(&server, reqwest::Method::GET, &format!("/tenants/{fork}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(record["name"], "console-fork");
    browser
        .wait("the fork's chart", "document.querySelector('#chart svg') && document.querySelector('#chart svg').dataset.events === '5'")
        .await;
    browser
        .click(&format!(
            "#tenants tr[data-tenant-id=\"{tenant}\"] button.open"
        ))
        .await;
    browser
        .wait(
            "the tenant again",
            &format!("document.querySelector('#tenant-panel').dataset.tenantId === '{tenant}'"),
        )
        .await;

    // Delete: two clicks (the second confirms), then the row and the tenant are gone.
    let delete = format!("#tenants tr[data-tenant-id=\"{tenant}\"] button.delete");
    browser.click(&delete).await;
    browser.click(&delete).await;
    browser
        .wait(
            "the row gone",
            &format!("!document.querySelector('#tenants tr[data-tenant-id=\"{tenant}\"]')"),
        )
        .await;
    assert_eq!(
        admin(&server, reqwest::Method::GET, &format!("/tenants/{tenant}"))
            .await
            .status(),
        404
    );
    let hidden = browser
        .js(
            "return document.querySelector('#tenant-panel').hidden",
            json!([]),
        )
        .await;
    assert_eq!(hidden, true);
    browser.screenshot("06-deleted", "header").await;
}

/// A decimal text as whole millionths (the chart sums so; the API's charges have at most 6
/// decimals in these tests).
fn micros(text: &str) -> i64 {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = format!("{frac:0<6}");
    int.parse::<i64>().unwrap() * 1_000_000 + frac[..6].parse::<i64>().unwrap()
}

/// A sum of JSON numbers in millionths, read from their text (no floating point).
#[derive(Default)]
struct Micros(i64);

impl Micros {
    fn add(&mut self, v: &Value) {
        self.0 += micros(&v.to_string());
    }

    fn micros(&self) -> i64 {
        self.0
    }
}
