//! Helpers of the OpenAPI tests: the three shipped documents (docs/openapi/*.json), their
//! (method, path) sets read with serde_json (not the code under test), the count of paths a
//! route table declares, a runner of the schemathesis CLI against a served document, and
//! openapi-core's check of the traffic that run recorded (tests/openapi/traffic.py).

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One shipped document: where it is served, the crates whose routers serve its operations,
/// and how schemathesis authenticates.
pub struct Document {
    /// File name under docs/openapi/.
    pub file: &'static str,
    /// Path it is served at.
    pub served_at: &'static str,
    /// File name of its OpenAPI 3.0.3 rendering under docs/openapi/.
    pub file_30: &'static str,
    /// Path that rendering is served at.
    pub served_30_at: &'static str,
    /// The number of paths its route table declares (the table builds both the router and
    /// the document).
    pub routers: fn() -> usize,
}

/// Surface B (usage events included), Surface C and the admin API.
pub const DOCUMENTS: [Document; 3] = [
    Document {
        file: "billing.json",
        served_at: "/billing/2/openapi.json",
        file_30: "billing-3.0.json",
        served_30_at: "/billing/2/openapi-3.0.json",
        routers: || paths(billing::routes::table().iter().map(|r| r.path)),
    },
    Document {
        file: "revenue.json",
        served_at: "/revenue/3/openapi.json",
        file_30: "revenue-3.0.json",
        served_30_at: "/revenue/3/openapi-3.0.json",
        routers: || paths(revenue::routes::table().iter().map(|r| r.path)),
    },
    Document {
        file: "admin.json",
        served_at: "/sandbox/v1/openapi.json",
        file_30: "admin-3.0.json",
        served_30_at: "/sandbox/v1/openapi-3.0.json",
        routers: || paths(admin::routes::table().iter().map(|r| r.path)),
    },
];

/// The number of distinct paths among `paths`.
fn paths<'a>(paths: impl Iterator<Item = &'a str>) -> usize {
    paths.collect::<BTreeSet<_>>().len()
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

impl Document {
    /// The shipped text.
    pub fn text(&self) -> String {
        let path = workspace_root().join("docs/openapi").join(self.file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The shipped document, parsed.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text()).expect("document is JSON")
    }

    /// The shipped OpenAPI 3.0.3 rendering.
    pub fn text_30(&self) -> String {
        let path = workspace_root().join("docs/openapi").join(self.file_30);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The shipped OpenAPI 3.0.3 rendering, parsed.
    pub fn json_30(&self) -> Value {
        serde_json::from_str(&self.text_30()).expect("document is JSON")
    }

    /// The base paths of the document's `servers` entries, without a trailing slash (`""`
    /// for `/`): its paths are served under each. Surface C has two, `/revenue/3` (first,
    /// the docs' one) and the platform's `/calypso/3`; the others one, `/`.
    pub fn bases(&self) -> Vec<String> {
        let json = self.json();
        let servers = json["servers"].as_array().expect("servers");
        assert!(!servers.is_empty(), "{}: no server entry", self.file);
        servers
            .iter()
            .map(|s| {
                let url = s["url"].as_str().expect("server url");
                url.trim_end_matches('/').to_string()
            })
            .collect()
    }

    /// The document's own path in its `paths` (`served_at` less the first base path).
    pub fn own_path(&self) -> String {
        let bases = self.bases();
        self.served_at
            .strip_prefix(bases[0].as_str())
            .expect("served under the first base path")
            .to_string()
    }

    /// Number of paths its route table declares (each once however many base paths it is
    /// mounted under).
    pub fn declared_routes(&self) -> usize {
        (self.routers)()
    }
}

/// HTTP methods an operation may have.
pub const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The (METHOD, path) pairs of a document.
pub fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// `path` with every `{param}` replaced by `value`.
pub fn fill(path: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').expect("closing brace") + open;
        out.push_str(value);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// What one schemathesis run reported.
#[derive(Debug)]
pub struct FuzzReport {
    /// Whether the CLI exited 0.
    pub passed: bool,
    /// Operations tested.
    pub operations: u64,
    /// Test cases generated.
    pub cases: u64,
    /// The CLI's whole output (for the failure message).
    pub output: String,
    /// The run's working directory, holding its recorded traffic (`traffic.yaml`, a VCR
    /// cassette) for [`check_traffic`].
    pub work: tempfile::TempDir,
}

/// What openapi-core said of a run's recorded traffic.
#[derive(Debug)]
pub struct TrafficReport {
    /// Whether every recorded request schemathesis drew as valid, and every recorded
    /// response, is valid against the document.
    pub passed: bool,
    /// tests/openapi/traffic.py's summary line, then its failures.
    pub output: String,
}

/// Checks the traffic a schemathesis run recorded against the shipped document with
/// openapi-core (tests/openapi/traffic.py): a second validator, written by others, over the
/// same live requests and responses.
pub fn check_traffic(doc: &Document, report: &FuzzReport) -> TrafficReport {
    let out = std::process::Command::new("python3")
        .arg(workspace_root().join("tests/openapi/traffic.py"))
        .arg(workspace_root().join("docs/openapi").join(doc.file))
        .arg(report.work.path().join("traffic.yaml"))
        .output()
        .expect("python3 tests/openapi/traffic.py");
    TrafficReport {
        passed: out.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Runs `st run <base><served_at>` against `<base>` plus the document's first base path, with
/// `headers` and the conformance checks, in a temporary directory, with at most `max_examples`
/// cases per operation and phase; the run records its traffic (a VCR cassette, kept in the
/// report's `work` directory). One worker: with two, hypothesis (which describes lambdas by
/// parsing their source with `ast`, not thread-safe on Python 3.11.7) failed a run on an error
/// of the tool itself ("SystemError: AST constructor recursion depth mismatch"). A failed run
/// is never retried: a tool error is a red run to fix at its cause.
pub fn schemathesis(
    base: &str,
    doc: &Document,
    headers: &[String],
    max_examples: u32,
) -> FuzzReport {
    crate::require_tool("schemathesis and openapi-core (Python)", || {
        crate::runs("st", &["--version"]) && crate::runs("python3", &["-c", "import openapi_core"])
    });
    let work = tempfile::tempdir().expect("temp dir");
    let seed = std::env::var("OPENAPI_FUZZ_SEED").unwrap_or_else(|_| "20261126".into());
    let mut cmd = std::process::Command::new("st");
    cmd.current_dir(work.path())
        .env("NO_COLOR", "1")
        .arg("run")
        .arg(format!("{base}{}", doc.served_at))
        .args(["--url", &format!("{base}{}", doc.bases()[0])])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_schema_conformance,response_headers_conformance",
        ])
        .args(["--max-examples", &max_examples.to_string()])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--workers", "1", "--seed", &seed])
        .args(["--generation-database", "none", "--no-color"])
        .args(["--request-timeout", "30"])
        .args(["--report", "vcr", "--report-vcr-path", "traffic.yaml"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.output().expect("run schemathesis (st)");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let number_after = |label: &str| -> u64 {
        output
            .lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .and_then(|rest| {
                rest.trim()
                    .split([' ', '/', ','])
                    .next()
                    .map(str::to_string)
            })
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let operations = number_after("Tested:");
    let cases = output
        .lines()
        .skip_while(|l| !l.trim().starts_with("Test cases:"))
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    FuzzReport {
        passed: out.status.success(),
        operations,
        cases,
        output,
        work,
    }
}
