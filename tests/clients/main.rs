//! Clients generated from the served OpenAPI documents, with tools nobody on this project
//! wrote, work unchanged against the real server:
//! - openapi-python-client (default settings; any warning fails) generates the billing,
//!   revenue and admin clients, and tests/clients/smoke.py drives the live server through
//!   them (a filtered list, GET-then-PUT round trips of agreement services and ledgers, a
//!   usage post with an erred event, an amount read as an exact decimal, a collector and a
//!   ledger run, a tenant's clock), every exchange also checked by openapi-core against the
//!   document; each schema member is one class (a nullable enumeration is one enum class,
//!   not one per union branch);
//! - openapi-typescript generates the types of all three, and `tsc --strict --noEmit` checks
//!   live answers (and the round trips' PUT bodies) against them;
//! - the Rust client (clients/rust, progenitor over the OpenAPI 3.0.3 documents) makes the
//!   same first calls (`rust`).
//!
//! The tools: tests/requirements.txt (pip) and tests/clients/npm-tools.txt (npm), installed
//! by tests/setup.sh (`make test`).

mod rust;

use e2e::openapi::{workspace_root, Document, DOCUMENTS};
use e2e::{runs, TestServer, TestTenant, ADMIN_KEY};
use serde_json::Value;
use std::path::Path;

/// The short name of a document (`billing.json` -> `billing`): the output directory of its
/// generated client and the module of its TypeScript types.
fn name(doc: &Document) -> &'static str {
    doc.file.trim_end_matches(".json")
}

/// Runs `program args` in `dir` and answers its output (stdout then stderr), failing the
/// test with that output when it exits non-zero.
async fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = tokio::process::Command::new(program)
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program} {args:?}:\n{text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_python_clients_work_against_the_server() {
    e2e::require_tool("openapi-python-client and openapi-core (Python)", || {
        runs("openapi-python-client", &["--version"])
            && runs("python3", &["-c", "import openapi_core"])
    });
    let s = TestServer::start().await;
    let tenant = s.create_tenant("python-client", "demo").await;
    let work = tempfile::tempdir().expect("temp dir");
    let started = std::time::Instant::now();
    for doc in &DOCUMENTS {
        let url = s.url(doc.served_at);
        let args = ["generate", "--url", &url, "--output-path", name(doc)];
        let said = run(work.path(), "openapi-python-client", &args).await;
        // Default settings, and nothing to warn about: a warning means a schema the
        // generator skipped or guessed at.
        assert!(
            !said.to_lowercase().contains("warning"),
            "openapi-python-client warned on {}:\n{said}",
            doc.served_at
        );
        assert!(work.path().join(name(doc)).is_dir(), "{said}");
        // One class per member: a nullable enumeration is one enum class (its member
        // optional), not one per branch of the union the generator took apart.
        let groups = classes_per_member(&work.path().join(name(doc)));
        let split: Vec<_> = groups.values().filter(|g| g.len() > 1).collect();
        assert!(
            split.is_empty(),
            "{}: members made into several classes: {split:?}",
            doc.served_at
        );
        assert!(
            groups.len() > 10,
            "{}: {} models",
            doc.served_at,
            groups.len()
        );
    }
    let generated = started.elapsed();
    let root = workspace_root();
    let smoke = root.join("tests/clients/smoke.py");
    let docs = root.join("docs/openapi");
    let args = [
        smoke.to_str().expect("path"),
        work.path().to_str().expect("path"),
        docs.to_str().expect("path"),
        &s.base,
        &tenant.api_key,
        ADMIN_KEY,
        &tenant.id,
    ];
    let said = run(work.path(), "python3", &args).await;
    println!("{said}");
    println!(
        "generated 3 clients in {:.1} s, smoke test {:.1} s",
        generated.as_secs_f64(),
        (started.elapsed() - generated).as_secs_f64()
    );
    assert!(said.contains("smoke: 10 steps passed"), "{said}");
}

/// The model modules openapi-python-client wrote under `out` (its one package's `models/`),
/// grouped by the schema member they stand for: a generated name is the member's, then one
/// `_type_N` per branch of a union it took apart (`ledger_conversion_currency_type_0`).
/// Groups of more than one module are one member made into several classes.
fn classes_per_member(out: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut groups = std::collections::BTreeMap::<String, Vec<String>>::new();
    for package in std::fs::read_dir(out).expect("generated client").flatten() {
        let models = package.path().join("models");
        let Ok(files) = std::fs::read_dir(&models) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".py").filter(|s| *s != "__init__") else {
                continue;
            };
            let mut member = stem;
            while let Some((head, n)) = member.rsplit_once("_type_") {
                if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) {
                    break;
                }
                member = head;
            }
            groups
                .entry(member.to_string())
                .or_default()
                .push(stem.to_string());
        }
    }
    groups
}

/// The npm tools of tests/clients/npm-tools.txt (installed by tests/setup.sh).
fn require_npm_tools() {
    e2e::require_tool("openapi-typescript and tsc (npm)", || {
        runs("openapi-typescript", &["--version"]) && runs("tsc", &["--version"])
    });
}

/// GET `path` with the tenant's API key (or the admin key for `/sandbox/`), asserting 200.
async fn live(s: &TestServer, tenant: &TestTenant, path: &str) -> Value {
    let req = s.client.get(s.url(path));
    let req = if path.starts_with("/sandbox/") {
        req.header("X-Admin-Key", ADMIN_KEY)
    } else {
        req.header("X-Api-Key", &tenant.api_key)
    };
    let r = req.send().await.expect("request");
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_types_generated_from_the_documents_type_live_answers() {
    require_npm_tools();
    let s = TestServer::start().await;
    let tenant = s.create_tenant("typescript", "demo").await;
    let work = tempfile::tempdir().expect("temp dir");
    for doc in &DOCUMENTS {
        let out = format!("{}.ts", name(doc));
        let said = run(
            work.path(),
            "openapi-typescript",
            &[&s.url(doc.served_at), "-o", &out],
        )
        .await;
        assert!(
            !said.to_lowercase().contains("warn") && !said.to_lowercase().contains("error"),
            "openapi-typescript on {}:\n{said}",
            doc.served_at
        );
    }
    // Live answers as typed constants: tsc refuses a member the document does not declare,
    // a null it does not allow, a value outside an enum. The PUT bodies are the GET answers
    // themselves (the round trips a client makes).
    let services = live(&s, &tenant, "/billing/2/agreement-services?status=ACTIVE").await;
    let ledgers = live(&s, &tenant, "/revenue/3/ledgers").await;
    let ledger_id = ledgers[0]["id"].as_i64().expect("ledger id");
    let ledger = live(&s, &tenant, &format!("/revenue/3/ledgers/{ledger_id}")).await;
    // A collector run gathers charge info into the ledger, not yet posted: states null.
    let r = s
        .client
        .post(s.url("/revenue/3/collector-runs"))
        .header("X-Api-Key", &tenant.api_key)
        .json(&serde_json::json!({"type": "MANUAL", "collector_operations": []}))
        .send()
        .await
        .expect("collector run");
    assert_eq!(r.status(), 201);
    let infos = live(
        &s,
        &tenant,
        &format!("/revenue/3/ledgers/{ledger_id}/chargeinfos"),
    )
    .await;
    let clock = live(
        &s,
        &tenant,
        &format!("/sandbox/v1/tenants/{}/clock", tenant.id),
    )
    .await;
    let ts = format!(
        r#"import type {{ components as B }} from "./billing";
import type {{ components as C }} from "./revenue";
import type {{ components as A }} from "./admin";
type BS = B["schemas"];
type CS = C["schemas"];
type AS = A["schemas"];

export const services: BS["AgreementService"][] = {services};
export const servicePuts: BS["AgreementServicePatch"][] = services;
export const ledgers: CS["LedgerListItem"][] = {ledgers};
export const ledger: CS["Ledger"] = {ledger};
export const ledgerPut: CS["LedgerFields"] = ledger;
export const chargeInfos: CS["ChargeInfo"][] = {infos};
export const clock: AS["Clock"] = {clock};
export const setClock: AS["SetClock"][] = [{{ mode: "frozen" }}, {{ mode: null }}, {{ offset_seconds: 60 }}];
"#
    );
    std::fs::write(work.path().join("use.ts"), ts).expect("write use.ts");
    let said = run(
        work.path(),
        "tsc",
        &[
            "--noEmit",
            "--strict",
            "--target",
            "es2020",
            "--module",
            "esnext",
            "--moduleResolution",
            "bundler",
            "use.ts",
        ],
    )
    .await;
    println!(
        "tsc: {} ({} services, {} charge infos)",
        if said.is_empty() { "clean" } else { &said },
        services.as_array().map_or(0, Vec::len),
        infos.as_array().map_or(0, Vec::len)
    );
}
