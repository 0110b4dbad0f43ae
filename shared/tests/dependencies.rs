//! No unused dependency in the workspace: every dependency a member's Cargo.toml declares
//! (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, target-specific tables)
//! must be named by that member's Rust code, as `name::`, `use name`, `extern crate name` or
//! `name!` (the crate name with `-` read as `_`; a renamed dependency by its key). An unused
//! dependency costs every build its compile time and hides what a crate really needs.
//!
//! The rule is cargo-machete's, kept in `cargo test` so it runs with every other check and
//! needs no tool installed (installing cargo-machete cost a fresh CI machine about 2.5
//! minutes). Like machete, it reads text: a name in a comment counts as a use. A dependency
//! named only by generated code, or used only for its features or links, is listed where
//! machete reads it too, in its manifest's `[package.metadata.cargo-machete] ignored = [...]`,
//! with the reason in a comment above (clients/rust/Cargo.toml does so).
//!
//! On failure it names the manifest, the dependency and the files it searched.
//!
//! Second rule, of the same kind (what a build compiles for nothing): a target whose
//! manifest says `test = false` holds no test. `cargo test` builds every library and binary a
//! second time, as a test harness, unless its manifest switches that off; the workspace's
//! targets without a unit test do (about 40 s of a CI build's CPU), and this test keeps one
//! from hiding a test added later, which `cargo test` would never build nor run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

mod scan;

use std::path::{Path, PathBuf};

/// One declared dependency: its key (the name code uses), the manifest section it is in.
#[derive(Debug)]
struct Declared {
    name: String,
    section: String,
}

/// The dependencies a manifest declares, in its dependency tables: `name = ...`,
/// `name.workspace = true`, and `[dependencies.name]` tables.
fn declared(manifest: &str) -> Vec<Declared> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim_matches(|c| c == '[' || c == ']');
            section = header.to_string();
            // `[dependencies.name]`, `[target.'cfg(x)'.dev-dependencies.name]`
            for table in ["dependencies.", "dev-dependencies.", "build-dependencies."] {
                if let Some(at) = header.find(table) {
                    let before = &header[..at];
                    if before.is_empty() || before.ends_with('.') {
                        out.push(Declared {
                            name: header[at + table.len()..].trim_matches('"').to_string(),
                            section: header[..at + table.len() - 1].to_string(),
                        });
                        section.clear();
                    }
                }
            }
            continue;
        }
        if !is_dependency_table(&section) {
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let name = key.split('.').next().unwrap_or(key).trim_matches('"');
        if !name.is_empty() {
            out.push(Declared {
                name: name.to_string(),
                section: section.clone(),
            });
        }
    }
    out
}

/// The names of a manifest's `[package.metadata.cargo-machete] ignored = [...]` list.
fn ignored(manifest: &str) -> Vec<String> {
    let Some(at) = manifest.find("[package.metadata.cargo-machete]") else {
        return Vec::new();
    };
    let rest = &manifest[at..];
    let Some(list) = rest.find("ignored").and_then(|i| {
        let open = i + rest[i..].find('[')?;
        let close = open + rest[open..].find(']')?;
        Some(&rest[open + 1..close])
    }) else {
        return Vec::new();
    };
    list.split(',')
        .map(|n| n.trim().trim_matches('"').to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

fn is_dependency_table(section: &str) -> bool {
    ["dependencies", "dev-dependencies", "build-dependencies"]
        .iter()
        .any(|t| section == *t || section.ends_with(&format!(".{t}")))
}

/// True when `code` names the crate `ident` as cargo-machete would see it.
fn names(code: &str, ident: &str) -> bool {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(found) = code[from..].find(ident) {
        let at = from + found;
        let end = at + ident.len();
        from = end;
        if at > 0 && is_ident(bytes[at - 1]) {
            continue;
        }
        if end < bytes.len() && is_ident(bytes[end]) {
            continue;
        }
        let rest = &code[end..];
        let before = code[..at].trim_end();
        if rest.starts_with("::")
            || rest.starts_with('!')
            || before.ends_with("use")
            || before.ends_with("extern crate")
        {
            return true;
        }
    }
    false
}

/// The workspace's members, from the root manifest's `members = [...]`.
fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = manifest.find("members = [").expect("a members list") + "members = [".len();
    let end = start + manifest[start..].find(']').expect("its end");
    manifest[start..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m))
        .collect()
}

#[test]
fn every_declared_dependency_is_used() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let members = members(root);
    assert!(members.len() >= 5, "members found: {members:?}");
    let mut unused = Vec::new();
    for member in &members {
        let manifest = std::fs::read_to_string(member.join("Cargo.toml")).unwrap();
        let mut files = Vec::new();
        scan::rust_files(member, &mut files);
        let code: String = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let ignored = ignored(&manifest);
        for dep in declared(&manifest) {
            if ignored.contains(&dep.name) {
                continue;
            }
            if !names(&code, &dep.name.replace('-', "_")) {
                unused.push(format!(
                    "{}: [{}] {} is not named by the {} .rs files under {}",
                    member.join("Cargo.toml").display(),
                    dep.section,
                    dep.name,
                    files.len(),
                    member.display()
                ));
            }
        }
    }
    assert!(
        unused.is_empty(),
        "unused dependencies (remove them; or, when only generated code names one, list it in \
         [package.metadata.cargo-machete] ignored, with the reason):\n{}",
        unused.join("\n")
    );
}

/// A `[lib]` or `[[bin]]` table of a manifest, as far as this test reads it.
struct Target {
    lib: bool,
    path: Option<String>,
    test: bool,
}

impl Target {
    /// Its root file, relative to the package (cargo's default when `path` is absent).
    fn root(&self) -> String {
        self.path.clone().unwrap_or_else(|| {
            if self.lib {
                "src/lib.rs"
            } else {
                "src/main.rs"
            }
            .to_string()
        })
    }
}

/// The root files of a manifest's `[lib]` and `[[bin]]` targets that say `test = false`.
fn untested_targets(manifest: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut current: Option<Target> = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            targets.extend(current.take());
            if line == "[lib]" || line == "[[bin]]" {
                current = Some(Target {
                    lib: line == "[lib]",
                    path: None,
                    test: true,
                });
            }
            continue;
        }
        let (Some(target), Some((key, value))) = (current.as_mut(), line.split_once('=')) else {
            continue;
        };
        match key.trim() {
            "path" => target.path = Some(value.trim().trim_matches('"').to_string()),
            "test" => target.test = value.trim() != "false",
            _ => {}
        }
    }
    targets.extend(current);
    targets
        .iter()
        .filter(|t| !t.test)
        .map(Target::root)
        .collect()
}

/// The files of the module tree rooted at `root`: the root and, recursively, each file a
/// `mod name;` declaration (not an inline `mod name { .. }`) loads.
fn module_tree(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(file) = todo.pop() {
        let code = scan::code_only(&std::fs::read_to_string(&file).unwrap());
        let tokens = scan::tokens(&code);
        for pair in tokens.windows(3) {
            if pair[0].0 == "mod" && pair[2].0 == ";" {
                let dir = scan::module_dir(&file);
                let name = &pair[1].0;
                let flat = dir.join(format!("{name}.rs"));
                todo.push(if flat.exists() {
                    flat
                } else {
                    dir.join(name).join("mod.rs")
                });
            }
        }
        files.push(file);
    }
    files
}

#[test]
fn a_target_built_without_its_test_harness_holds_no_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut hidden = Vec::new();
    let mut checked = 0;
    for member in members(root) {
        let manifest = std::fs::read_to_string(member.join("Cargo.toml")).unwrap();
        for target in untested_targets(&manifest) {
            for file in module_tree(&member.join(&target)) {
                checked += 1;
                let code = scan::code_only(&std::fs::read_to_string(&file).unwrap());
                for mark in [
                    "#[test]",
                    "#[cfg(test)]",
                    "::test]",
                    "::test(",
                    "#[test_case",
                ] {
                    if code.contains(mark) {
                        hidden.push(format!(
                            "{} has `{mark}`, but its target ({} of {}) is built with test = false",
                            file.display(),
                            target,
                            member.join("Cargo.toml").display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        checked >= 10,
        "files of test = false targets checked: {checked}"
    );
    assert!(
        hidden.is_empty(),
        "tests cargo test would never build nor run (remove `test = false` from the target):\n{}",
        hidden.join("\n")
    );
}

#[test]
fn the_reading_finds_what_it_must() {
    let manifest = r#"
[package]
name = "x"

[dependencies]
serde.workspace = true
quick-xml = { version = "0.3" }
# commented = "1"

[features]
f = []

[dev-dependencies]
proptest = "1"

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[dependencies.tokio]
version = "1"
"#;
    let found: Vec<_> = declared(manifest)
        .into_iter()
        .map(|d| format!("{}:{}", d.section, d.name))
        .collect();
    assert_eq!(
        found,
        [
            "dependencies:serde",
            "dependencies:quick-xml",
            "dev-dependencies:proptest",
            "target.'cfg(unix)'.dependencies:libc",
            "dependencies:tokio",
        ]
    );
    assert_eq!(
        ignored("[package.metadata.cargo-machete]\nignored = [\"uuid\", \"regress\"]\n"),
        ["uuid", "regress"]
    );
    assert!(ignored(manifest).is_empty());
    assert!(names("use serde::Serialize;", "serde"));
    assert!(names("let x = quick_xml::Reader::new();", "quick_xml"));
    assert!(names("proptest! { }", "proptest"));
    assert!(names("extern crate libc;", "libc"));
    assert!(!names("use serde_json::Value;", "serde"));
    assert!(!names("let tokio_runtime = 1;", "tokio"));
    assert!(!names("mybase64::encode()", "base64"));
}
