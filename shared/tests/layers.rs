//! The layering of `shared/src`, checked: every `crate::<module>` reference in code (in `use`
//! lines, `use crate::{a, b::c}` groups, paths in expressions and types, and `super::` paths
//! that climb out of a top module) must point to a module of a lower layer in [`LAYERS`];
//! the HTTP stack (axum, tower, hyper) is used only by the web glue, the `http` crate's plain
//! types only by the web glue and the journal's rules (which record requests), and only config
//! reads the environment. Test code (`#[cfg(test)]` items and the files of `#[cfg(test)] mod
//! x;`) and comments are left out: tests may build on anything, and a doc comment may name the
//! layer that uses a module. On a forbidden edge the test fails naming the file, the line and
//! the reference. The graph of the top modules must also have no cycle.
//!
//! The same table is in docs/architecture.md ("Layers"). The scanner is `scan/mod.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

mod scan;

use scan::{code_only, line_text, module_path, non_test_files, relative, strip_tests, tokens};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers of `shared/src`, lowest first. A module may use the modules of lower layers
/// only (never its own layer's other modules, never a higher one).
const LAYERS: &[(&str, &[&str])] = &[
    ("leaf: the error type", &["error"]),
    (
        "leaf: values (amounts, names, instants and the tenant clock's reading; JSON Schema pieces)",
        &["money", "names", "time", "json_schema", "json_text"],
    ),
    ("leaf: credentials and tokens", &["auth"]),
    ("store (tenant databases, registry, S3)", &["store"]),
    ("query engine and rating rules", &["query", "rating"]),
    ("domain (every business rule)", &["domain"]),
    ("fixtures (the demo data and fixture documents, loaded through the domain)", &["fixtures"]),
    ("tenants (creating, listing, tokens)", &["tenants"]),
    (
        "sandbox powers (clock, faults, journal rules)",
        &["sandbox"],
    ),
    (
        "config (the composition root: builds every part's settings)",
        &["config"],
    ),
    ("web glue (axum)", &["web"]),
];

/// Pseudo-module of the HTTP stack crates; allowed in [`HTTP_USERS`] only.
const HTTP: &str = "<http stack: axum/tower/hyper>";
const HTTP_CRATES: &[&str] = &["axum", "tower", "tower_http", "hyper", "hyper_util"];
const HTTP_USERS: &[&str] = &["web"];
/// Pseudo-module of the `http` crate: request and response types, no server. The journal
/// (sandbox) keeps a request's method, URI and headers as they came and converts them off the
/// request's path, so it may name them.
const HTTP_TYPES: &str = "<http types: the http crate>";
const HTTP_TYPES_USERS: &[&str] = &["web", "sandbox"];
/// Pseudo-module of reading the environment (`std::env::var*`); allowed in [`ENV_READERS`].
const ENV: &str = "<environment: std::env::var>";
const ENV_READERS: &[&str] = &["config"];

/// One reference from a file to a top module (or pseudo-module).
#[derive(Debug, Clone)]
struct Edge {
    /// Path under `shared/src`, with `/`.
    file: String,
    from: String,
    to: String,
    line: usize,
    text: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

#[test]
fn every_edge_points_down_the_layer_table() {
    let edges = collect_edges(&src_dir());
    assert!(
        edges.iter().any(|e| e.from == "domain" && e.to == "store"),
        "the scan found no domain -> store edge: the parser is broken"
    );
    let mut violations = Vec::new();
    for e in &edges {
        if let Some(why) = forbidden(e) {
            violations.push(format!(
                "shared/src/{}:{}: `{}`\n  -> {}",
                e.file, e.line, e.text, why
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "{} forbidden reference(s) between the layers of shared/src (table in \
         shared/tests/layers.rs and docs/architecture.md):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// Why an edge is forbidden, `None` when it is allowed.
fn forbidden(e: &Edge) -> Option<String> {
    if e.to == HTTP {
        return (!HTTP_USERS.contains(&e.from.as_str())).then(|| {
            format!(
                "{} uses the HTTP stack; only {HTTP_USERS:?} may (the rules of a layer have no HTTP types)",
                e.from
            )
        });
    }
    if e.to == HTTP_TYPES {
        return (!HTTP_TYPES_USERS.contains(&e.from.as_str())).then(|| {
            format!(
                "{} uses the http crate's types; only {HTTP_TYPES_USERS:?} may",
                e.from
            )
        });
    }
    if e.to == ENV {
        return (!ENV_READERS.contains(&e.from.as_str())).then(|| {
            format!(
                "{} reads the environment; only {ENV_READERS:?} may (it builds every part's settings)",
                e.from
            )
        });
    }
    let Some(from) = layer_of(&e.from) else {
        return Some(format!("module {} is missing from LAYERS", e.from));
    };
    let Some(to) = layer_of(&e.to) else {
        return Some(format!("module {} is missing from LAYERS", e.to));
    };
    (to >= from).then(|| {
        format!(
            "{} (layer {from}: {}) may not use {} (layer {to}: {}): a layer uses only lower ones",
            e.from, LAYERS[from].0, e.to, LAYERS[to].0
        )
    })
}

#[test]
fn every_top_module_has_a_layer() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let (modules, _) = root_items(&lib);
    assert!(modules.len() >= 10, "lib.rs declares {modules:?}");
    let missing: Vec<_> = modules.iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(missing.is_empty(), "modules without a layer: {missing:?}");
}

#[test]
fn the_top_modules_have_no_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in collect_edges(&src_dir()) {
        if e.to != HTTP && e.to != HTTP_TYPES && e.to != ENV {
            graph.entry(e.from).or_default().insert(e.to);
        }
    }
    assert!(graph.values().map(BTreeSet::len).sum::<usize>() >= 10);
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the top modules of shared/src form a cycle: {}",
            cycle.join(" -> ")
        );
    }
}

/// A cycle of `graph` as its modules (first repeated last), if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

/// The domain's own modules form no cycle either: a rule that two modules need lives in one
/// of them (or below both), so each can be read and changed from the bottom up. Its edges
/// are every path (`crate::domain::x`, `super::x`, groups) from a file of one child module
/// of `domain` to another; `domain/mod.rs` (the shared helpers every module uses) is below
/// them all.
#[test]
fn the_domain_modules_have_no_cycle() {
    let edges = domain_edges(&src_dir());
    assert!(
        edges
            .iter()
            .any(|e| e.from == "invoices" && e.to == "accounts"),
        "the scan found no invoices -> accounts edge: the scanner is broken"
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &edges {
        graph
            .entry(e.from.clone())
            .or_default()
            .insert(e.to.clone());
    }
    if let Some(cycle) = find_cycle(&graph) {
        let named: Vec<String> = cycle
            .windows(2)
            .filter_map(|w| edges.iter().find(|e| e.from == w[0] && e.to == w[1]))
            .map(|e| format!("shared/src/{}:{}: `{}`", e.file, e.line, e.text))
            .collect();
        panic!(
            "the modules of shared/src/domain form a cycle: {}\n{}",
            cycle.join(" -> "),
            named.join("\n")
        );
    }
}

/// The child modules `domain/mod.rs` declares.
fn domain_modules(src: &Path) -> Vec<String> {
    let code = strip_tests(&code_only(
        &std::fs::read_to_string(src.join("domain/mod.rs")).unwrap(),
    ))
    .0;
    let tokens = tokens(&code);
    tokens
        .windows(3)
        .filter(|w| w[0].0 == "mod" && w[2].0 == ";")
        .map(|w| w[1].0.clone())
        .collect()
}

/// Every reference from a file of one child module of `domain` to another child module.
fn domain_edges(src: &Path) -> Vec<Edge> {
    let modules = domain_modules(src);
    let mut edges = Vec::new();
    for file in non_test_files(&src.join("domain")) {
        let rel = relative(&file.path, src);
        let module_path = module_path(&rel);
        if module_path.len() < 2 {
            continue;
        }
        for (path, line) in absolute_paths(&file.code, &module_path) {
            let to = match path.as_slice() {
                [root, child, ..] if root == "domain" && modules.contains(child) => child,
                _ => continue,
            };
            if *to != module_path[1] {
                edges.push(Edge {
                    file: rel.clone(),
                    from: module_path[1].clone(),
                    to: to.clone(),
                    line,
                    text: line_text(&file.source, line),
                });
            }
        }
    }
    edges
}

/// Every `crate::`, `super::` and `self::` path of `code` made absolute (from the crate
/// root) for a file whose module is `module_path`, with its line; a group `{a, b::c}`
/// gives one path per member (its first name).
fn absolute_paths(code: &str, module_path: &[String]) -> Vec<(Vec<String>, usize)> {
    let tokens = tokens(code);
    let at = |k: usize| tokens.get(k).map(|(t, _)| t.as_str()).unwrap_or("");
    let is_name = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    };
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let line = tokens[i].1;
        if (i > 0 && at(i - 1) == "::") || at(i + 1) != "::" {
            continue;
        }
        let mut base: Vec<String> = match at(i) {
            "crate" => Vec::new(),
            "super" => module_path[..module_path.len() - 1].to_vec(),
            "self" => module_path.to_vec(),
            _ => continue,
        };
        let mut k = i + 2;
        while at(k) == "super" && at(k + 1) == "::" {
            base.pop();
            k += 2;
        }
        while is_name(at(k)) && at(k + 1) == "::" {
            base.push(at(k).to_string());
            k += 2;
        }
        if at(k) == "{" {
            let mut depth = 0;
            let mut expect_name = true;
            while k < tokens.len() {
                match at(k) {
                    "{" => depth += 1,
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    "," if depth == 1 => expect_name = true,
                    name if depth == 1 && expect_name && is_name(name) => {
                        let mut path = base.clone();
                        if name != "self" {
                            path.push(name.to_string());
                        }
                        out.push((path, tokens[k].1));
                        expect_name = false;
                    }
                    _ => {}
                }
                k += 1;
            }
        } else {
            if is_name(at(k)) {
                base.push(at(k).to_string());
            }
            out.push((base, line));
        }
    }
    out
}

#[test]
fn the_domain_scanner_resolves_super_and_groups() {
    let path: Vec<String> = ["domain", "billing", "runs"].map(String::from).to_vec();
    let src = "use super::super::clock::Ran;\n\
               use crate::domain::{accounts, invoices::x};\n\
               fn f() { super::invoicing::issue(); crate::money::canonical(); }\n";
    let found = absolute_paths(&code_only(src), &path);
    let found: Vec<(String, usize)> = found.iter().map(|(p, l)| (p.join("::"), *l)).collect();
    let want = [
        ("domain::clock::Ran", 1),
        ("domain::accounts", 2),
        ("domain::invoices", 2),
        ("domain::billing::invoicing::issue", 3),
        ("money::canonical", 3),
    ];
    let want: Vec<(String, usize)> = want.iter().map(|(p, l)| (p.to_string(), *l)).collect();
    assert_eq!(found, want);
}

// ---- the scanner ----------------------------------------------------------------------

/// Every reference of every non-test file under `src` (lib.rs excepted: it only declares).
fn collect_edges(src: &Path) -> Vec<Edge> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let (modules, reexports) = root_items(&lib);
    let mut edges = Vec::new();
    for file in non_test_files(src) {
        let rel = relative(&file.path, src);
        if rel == "lib.rs" {
            continue;
        }
        let module_path = module_path(&rel);
        for (to, line) in references(&file.code, &module_path, &modules, &reexports) {
            edges.push(Edge {
                file: rel.clone(),
                from: module_path[0].clone(),
                to,
                line,
                text: line_text(&file.source, line),
            });
        }
    }
    edges
}

/// The top modules lib.rs declares, and the items it re-exports (name -> module).
fn root_items(lib: &str) -> (Vec<String>, BTreeMap<String, String>) {
    let tokens = tokens(&strip_tests(&code_only(lib)).0);
    let mut modules = Vec::new();
    let mut reexports = BTreeMap::new();
    for (i, (t, _)) in tokens.iter().enumerate() {
        let at = |k: usize| tokens.get(i + k).map(|(t, _)| t.as_str()).unwrap_or("");
        if t == "mod" && at(2) == ";" {
            modules.push(at(1).to_string());
        }
        if t == "use" && at(2) == "::" {
            let module = at(1).to_string();
            let mut k = 3;
            while !matches!(at(k), ";" | "") {
                let name = at(k);
                if name.chars().next().is_some_and(char::is_alphabetic) && at(k + 1) != "::" {
                    reexports.insert(name.to_string(), module.clone());
                }
                k += 1;
            }
        }
    }
    (modules, reexports)
}

/// The references of one file's code to other top modules, with their lines.
fn references(
    code: &str,
    module_path: &[String],
    modules: &[String],
    reexports: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let tokens = tokens(code);
    let own = &module_path[0];
    let mut out = Vec::new();
    let push = |name: &str, line: usize, out: &mut Vec<(String, usize)>| {
        let target = if modules.iter().any(|m| m == name) {
            name.to_string()
        } else if let Some(m) = reexports.get(name) {
            m.clone()
        } else {
            format!("<unknown crate item {name}>")
        };
        if &target != own {
            out.push((target, line));
        }
    };
    for i in 0..tokens.len() {
        let (t, line) = (&tokens[i].0, tokens[i].1);
        let prev = if i > 0 { tokens[i - 1].0.as_str() } else { "" };
        let next = tokens.get(i + 1).map(|(t, _)| t.as_str()).unwrap_or("");
        if t == "env"
            && next == "::"
            && matches!(
                tokens.get(i + 2).map(|(t, _)| t.as_str()),
                Some("var" | "var_os" | "vars" | "vars_os")
            )
        {
            out.push((ENV.to_string(), line));
            continue;
        }
        if prev == "::" || prev == "$" || next != "::" {
            continue;
        }
        // Where the path starts from: the crate root, or (through `super`) an ancestor.
        let (mut depth, mut k) = match t.as_str() {
            "crate" => (0usize, i + 2),
            "super" => {
                let mut depth = module_path.len() - 1;
                let mut k = i + 2;
                while tokens.get(k).is_some_and(|(t, _)| t == "super")
                    && tokens.get(k + 1).is_some_and(|(t, _)| t == "::")
                {
                    depth = depth.saturating_sub(1);
                    k += 2;
                }
                (depth, k)
            }
            name if HTTP_CRATES.contains(&name) => {
                out.push((HTTP.to_string(), line));
                continue;
            }
            "http" => {
                out.push((HTTP_TYPES.to_string(), line));
                continue;
            }
            _ => continue,
        };
        if depth > 0 {
            continue; // still inside this file's own top module
        }
        match tokens.get(k).map(|(t, _)| t.as_str()) {
            Some("{") => {
                // A group: the first name of each member at depth 1.
                depth = 1;
                let mut expect_name = true;
                k += 1;
                while depth > 0 && k < tokens.len() {
                    match tokens[k].0.as_str() {
                        "{" => depth += 1,
                        "}" => depth -= 1,
                        "," if depth == 1 => expect_name = true,
                        name if depth == 1 && expect_name => {
                            if name != "self" {
                                push(name, tokens[k].1, &mut out);
                            }
                            expect_name = false;
                        }
                        _ => {}
                    }
                    k += 1;
                }
            }
            Some(name) => push(name, line, &mut out),
            None => {}
        }
    }
    out
}

// ---- the scanner's own checks ------------------------------------------------------------

fn refs(code: &str, path: &[&str]) -> Vec<(String, usize)> {
    let modules: Vec<String> = ["store", "domain", "web", "error", "time"]
        .map(String::from)
        .to_vec();
    let reexports = BTreeMap::from([("Error".to_string(), "error".to_string())]);
    let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    let (code, _) = strip_tests(&code_only(code));
    references(&code, &path, &modules, &reexports)
}

#[test]
fn the_scanner_reads_groups_paths_and_super() {
    let src = "use crate::{store::{a, b}, Error, self};\n\
               fn f() { let x = crate::web::thing(); }\n\
               use super::super::time::now;\n\
               use super::sibling;\n";
    let found = refs(src, &["domain", "collect", "sources"]);
    let targets: Vec<(&str, usize)> = found.iter().map(|(t, l)| (t.as_str(), *l)).collect();
    assert_eq!(targets, [("store", 1), ("error", 1), ("web", 2)]);
    // From a file of a top module, `super::` is the crate root.
    let found = refs(
        "use super::web::x;\nuse axum::Router;\nstd::env::var(\"A\");",
        &["store"],
    );
    let targets: Vec<&str> = found.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(targets, ["web", HTTP, ENV]);
}

#[test]
fn the_scanner_skips_comments_strings_and_tests() {
    let src = "//! see crate::web\n\
               /* crate::web /* nested */ crate::web */\n\
               const S: &str = \"crate::web {\";\n\
               const R: &str = r#\"crate::web \"# ;\n\
               const C: char = '{';\n\
               fn f<'a>(x: &'a str) -> &'a str { crate::store::g(x) }\n\
               #[cfg(test)]\nmod tests { use crate::web::x; fn g() { let _ = '}'; } }\n\
               #[cfg(test)]\nmod testing;\n\
               fn h() { crate::time::now(); }\n";
    let (code, test_mods) = strip_tests(&code_only(src));
    assert_eq!(test_mods, ["testing"]);
    assert_eq!(code.lines().count(), src.lines().count());
    let found = refs(src, &["domain"]);
    let targets: Vec<(&str, usize)> = found.iter().map(|(t, l)| (t.as_str(), *l)).collect();
    assert_eq!(targets, [("store", 6), ("time", 11)]);
}

#[test]
fn a_forbidden_edge_is_named_with_its_file_and_line() {
    let up = Edge {
        file: "store/mod.rs".into(),
        from: "store".into(),
        to: "domain".into(),
        line: 3,
        text: "use crate::domain::x;".into(),
    };
    let why = forbidden(&up).expect("store -> domain is forbidden");
    assert!(
        why.contains("store (layer 3") && why.contains("domain (layer 5"),
        "{why}"
    );
    let down = Edge {
        from: "domain".into(),
        to: "store".into(),
        ..up.clone()
    };
    assert_eq!(forbidden(&down), None);
    let http = Edge {
        to: HTTP.into(),
        ..up.clone()
    };
    assert!(forbidden(&http).is_some());
    let env = Edge {
        to: ENV.into(),
        from: "config".into(),
        ..up
    };
    assert_eq!(forbidden(&env), None);
}
