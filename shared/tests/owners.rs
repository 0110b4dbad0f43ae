//! One owner per table, checked: every table of the databases is written (INSERT, UPDATE,
//! DELETE, REPLACE) by one module of `shared/src`, its owner, which exposes the operations
//! the others need; and the surface crates (`functions/*/src`) hold no SQL at all. The owner
//! of each table is the table "Who writes each table" of docs/architecture.md, which this
//! test parses, so the page cannot drift from the code.
//!
//! What counts as a write, in non-test code (`#[cfg(test)]` items and the files of
//! `#[cfg(test)] mod x;` left out, comments left out):
//! - a string literal (plain or raw, also the format string of `format!`) holding
//!   `INSERT [OR ...] INTO t`, `REPLACE INTO t`, `UPDATE t SET` or `DELETE FROM t` (the
//!   table quoted or not, with a `main.`/`temp.` schema or not); a table written as a
//!   placeholder (`{table}`) is a write of any table;
//! - a call of the domain's column helpers `insert(tx, "t", ..)` / `update(tx, "t", ..)`
//!   (`shared/src/domain/mod.rs`), which build their statement from the table argument; a
//!   table argument that is not a literal is a write of any table;
//! - the tables named in `fixture_columns_writer!("t", ..)` and `run_progress_ops!("t")`,
//!   the domain's macros that declare an owner's writer of a fixture document's columns and
//!   a run table's start (their statements are built from the named table).
//!
//! A write of any table is allowed only in the modules the page lists as moving rows without
//! a rule (the column helpers, resetting and restoring a tenant). In `functions/*/src` any
//! literal holding SQL (SELECT, INSERT, UPDATE ... SET, DELETE FROM, JOIN, WHERE, ORDER BY)
//! fails. There are no exceptions: a write outside its owner, or SQL in a surface crate,
//! moves to the owner (or the domain's read models, `shared/src/domain/lists/`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a test fails by panicking"
)]

mod scan;

use scan::{lex, module_path, non_test_files, relative, strip_tests, Literal};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The page holding the owner table.
const PAGE: &str = "docs/architecture.md";
/// The heading of the owner table on [`PAGE`].
const OWNERS_HEADING: &str = "### Who writes each table";
/// The heading of the modules that write any table (rows, not rules) on [`PAGE`].
const ANY_TABLE_HEADING: &str = "### Modules that write any table";
/// The table name of a write whose table is not written out (a placeholder, a variable).
const ANY_TABLE: &str = "<any table>";
/// The "table" of SQL in a surface crate that writes nothing.
const READ_SQL: &str = "<read SQL>";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// One write (or, in a surface crate, one piece of SQL) found in the code.
#[derive(Debug, Clone, PartialEq)]
struct Write {
    /// Path from the workspace root, with `/`.
    file: String,
    line: usize,
    /// The table written, [`ANY_TABLE`], or [`READ_SQL`] for SQL that writes nothing.
    table: String,
}

/// What the page says.
struct Rules {
    /// Table -> owning module path (`domain::accounts`, `store`).
    owners: BTreeMap<String, String>,
    /// Modules that may write any table.
    any_table: Vec<String>,
}

#[test]
fn every_table_is_written_by_its_owner_only() {
    let root = workspace();
    let rules = read_rules(&std::fs::read_to_string(root.join(PAGE)).unwrap());
    assert!(
        rules.owners.len() >= 40,
        "{PAGE} lists {} owners: the page's table was not read",
        rules.owners.len()
    );
    let writes = scan_workspace(&root);
    assert!(
        writes
            .iter()
            .any(|w| w.table == "billing_accounts" && w.file.contains("domain/accounts")),
        "the scan found no write of billing_accounts in the accounts module: the scanner is broken"
    );
    let violations: Vec<String> = writes
        .iter()
        .filter_map(|w| {
            let why = forbidden(w, &rules)?;
            Some(format!("{}:{}: {}\n  -> {why}", w.file, w.line, w.table))
        })
        .collect();
    assert!(
        violations.is_empty(),
        "{} write(s) outside the table's owner (owners in {PAGE}, \"{OWNERS_HEADING}\"):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// Why a write breaks the rules, `None` when its module may write its table.
fn forbidden(w: &Write, rules: &Rules) -> Option<String> {
    if w.file.starts_with("functions/") {
        return Some(
            "SQL in a surface crate: surfaces parse, call the domain and render; the SQL \
             belongs to the table's owner or the query layer"
                .into(),
        );
    }
    let module = module_of(&w.file);
    let within = |owner: &str| module == owner || module.starts_with(&format!("{owner}::"));
    if w.table == ANY_TABLE {
        return (!rules.any_table.contains(&module)).then(|| {
            format!(
                "{module} writes a table it does not name; only the modules under \
                 \"{ANY_TABLE_HEADING}\" may"
            )
        });
    }
    match rules.owners.get(&w.table) {
        None => Some(format!(
            "table {} has no owner: add it to \"{OWNERS_HEADING}\"",
            w.table
        )),
        Some(owner) if within(owner) => None,
        Some(owner) => Some(format!(
            "{module} writes {}, whose owner is {owner}: call an operation of {owner}",
            w.table
        )),
    }
}

/// `shared/src/domain/usage/post/store.rs` -> `domain::usage::post::store`.
fn module_of(file: &str) -> String {
    match file.strip_prefix("shared/src/") {
        Some(rel) => module_path(rel).join("::"),
        None => file.to_string(),
    }
}

// ---- the page ---------------------------------------------------------------------------

/// The rows of the markdown table following `heading`, as cells (header and rule left out).
fn table_rows(page: &str, heading: &str) -> Vec<Vec<String>> {
    let Some(at) = page.find(&format!("\n{heading}\n")) else {
        panic!("{PAGE} has no heading {heading:?}");
    };
    page[at + heading.len() + 2..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The names written in backquotes in `cell`.
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn read_rules(page: &str) -> Rules {
    let mut owners = BTreeMap::new();
    for row in table_rows(page, OWNERS_HEADING) {
        let owner = quoted(&row[1]);
        assert_eq!(owner.len(), 1, "one owner per row: {row:?}");
        for table in quoted(&row[0]) {
            let before = owners.insert(table.clone(), owner[0].clone());
            assert!(before.is_none(), "table {table} is listed twice");
        }
    }
    let any_table = table_rows(page, ANY_TABLE_HEADING)
        .iter()
        .flat_map(|row| quoted(&row[0]))
        .collect();
    Rules { owners, any_table }
}

// ---- the scanner ------------------------------------------------------------------------

/// Every write of `shared/src` and every piece of SQL of `functions/*/src`.
fn scan_workspace(root: &Path) -> Vec<Write> {
    let mut dirs = vec![root.join("shared/src")];
    for entry in std::fs::read_dir(root.join("functions")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            dirs.push(src);
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        for file in non_test_files(&dir) {
            let rel = relative(&file.path, root);
            let surface = rel.starts_with("functions/");
            let helpers = match rel.starts_with("shared/src/domain/") {
                true => Helpers::Bare,
                false if surface => Helpers::None,
                false => Helpers::Qualified,
            };
            for (line, table) in writes_in(&file.source, &file.code, helpers, surface) {
                out.push(Write {
                    file: rel.clone(),
                    line,
                    table,
                });
            }
        }
    }
    out
}

/// Which calls of the domain's column helpers a file's scan counts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Helpers {
    /// None (a surface crate, where any SQL fails anyway).
    None,
    /// `domain::insert(..)` only (outside the domain, where a bare `insert` is another
    /// function).
    Qualified,
    /// Also bare and `super::` calls (inside the domain).
    Bare,
}

/// The writes of one file, as (line, table), given its source and its code without test
/// items (`code`, as [`non_test_files`] gives it). `read_sql`: also count SQL that writes
/// nothing (as [`READ_SQL`]).
fn writes_in(source: &str, code: &str, helpers: Helpers, read_sql: bool) -> Vec<(usize, String)> {
    let (_, literals) = lex(source);
    let code: Vec<char> = code.chars().collect();
    // A literal inside test code was blanked with the rest of the item.
    let live: Vec<&Literal> = literals.iter().filter(|l| code[l.at] == '"').collect();
    let mut out = Vec::new();
    for l in &live {
        let found = statements(&l.text);
        if found.is_empty() && read_sql && is_sql(&l.text) {
            out.push((l.line, READ_SQL.to_string()));
        }
        for (offset, table) in found {
            let line = l.line + l.text[..offset].matches('\n').count();
            out.push((line, table));
        }
    }
    if helpers != Helpers::None {
        out.extend(helper_calls(&code, &live, helpers));
        out.extend(fixture_writers(&code, &live));
    }
    out.sort();
    out
}

/// The write statements of one literal's text, as (byte offset, table).
fn statements(text: &str) -> Vec<(usize, String)> {
    // Escapes read as spaces and quotes: `\"t\"` is `"t"`, a line continuation a space.
    let plain: String = text
        .chars()
        .map(|c| if c == '\\' { ' ' } else { c })
        .collect();
    let words = words(&plain);
    let word = |k: usize| words.get(k).map(|(_, w)| w.as_str()).unwrap_or("");
    let mut out = Vec::new();
    for (k, (offset, w)) in words.iter().enumerate() {
        let table_at = match w.as_str() {
            "INSERT" if word(k + 1) == "INTO" => k + 2,
            "INSERT" if word(k + 1) == "OR" && word(k + 3) == "INTO" => k + 4,
            "REPLACE" if word(k + 1) == "INTO" => k + 2,
            "DELETE" if word(k + 1) == "FROM" => k + 2,
            "UPDATE" if word(k + 2) == "SET" => k + 1,
            _ => continue,
        };
        out.push((*offset, table_name(word(table_at))));
    }
    out
}

/// The words of SQL text with their byte offsets: identifiers (with `.` for a schema),
/// placeholders `{..}` and quoted names as one word each, quotes removed.
fn words(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, c) in text.char_indices() {
        let part = c.is_alphanumeric() || matches!(c, '_' | '.' | '{' | '}');
        match (&mut current, part) {
            (Some((_, w)), true) => w.push(c),
            (None, true) => current = Some((i, c.to_string())),
            (Some(_), false) => out.extend(current.take()),
            (None, false) => {}
        }
    }
    out.extend(current);
    out
}

/// A written table's name: the schema (`main.`, `temp.`) dropped; a placeholder is
/// [`ANY_TABLE`].
fn table_name(word: &str) -> String {
    if word.is_empty() || word.contains('{') {
        return ANY_TABLE.to_string();
    }
    word.rsplit('.').next().unwrap_or(word).to_string()
}

/// Whether a literal of a surface crate holds SQL.
fn is_sql(text: &str) -> bool {
    let words = words(text);
    words.iter().enumerate().any(|(k, (_, w))| {
        let next = words.get(k + 1).map(|(_, w)| w.as_str()).unwrap_or("");
        matches!(w.as_str(), "SELECT" | "JOIN" | "WHERE")
            || (w == "ORDER" || w == "GROUP") && next == "BY"
    })
}

/// Calls of the domain's column helpers `insert(tx, table, ..)` and `update(tx, table, ..)`
/// in `code` (the domain's own files call them bare or through `super::`; others through
/// `domain::`), as (line, table).
fn helper_calls(code: &[char], literals: &[&Literal], helpers: Helpers) -> Vec<(usize, String)> {
    let text: String = code.iter().collect();
    let mut out = Vec::new();
    for name in ["insert", "update"] {
        for (at, _) in text.match_indices(name) {
            let at = text[..at].chars().count();
            let before = code[..at].iter().rev().find(|c| !c.is_whitespace());
            let ident = |c: &char| c.is_alphanumeric() || *c == '_';
            if code.get(at + name.len()).is_some_and(ident)
                || (at > 0 && ident(&code[at - 1]))
                || matches!(before, Some('.'))
            {
                continue;
            }
            let mut k = at + name.len();
            while code.get(k).is_some_and(|c| c.is_whitespace()) {
                k += 1;
            }
            if code.get(k) != Some(&'(') {
                continue;
            }
            // `fn insert(` declares, not calls; outside the domain only `domain::insert` is
            // the helper.
            let prefix: String = code[at.saturating_sub(8)..at].iter().collect();
            if prefix.ends_with("fn ")
                || (helpers == Helpers::Qualified && !prefix.ends_with("domain::"))
            {
                continue;
            }
            let line = code[..at].iter().filter(|c| **c == '\n').count() + 1;
            out.push((line, second_argument(code, k, literals)));
        }
    }
    out
}

/// The tables an owner names in the domain's writer macros (`fixture_columns_writer!("t",
/// ..)`, built on `update`; `run_progress_ops!("t")`, whose UPDATE is put together from
/// the table), each a write of that table at the call's line.
fn fixture_writers(code: &[char], literals: &[&Literal]) -> Vec<(usize, String)> {
    const MACROS: &[&str] = &["fixture_columns_writer!", "run_progress_ops!"];
    let text: String = code.iter().collect();
    let mut out = Vec::new();
    for (at, macro_name) in MACROS
        .iter()
        .flat_map(|m| text.match_indices(m).map(move |(at, _)| (at, *m)))
    {
        let open = text[..at].chars().count() + macro_name.chars().count();
        if code.get(open) != Some(&'(') {
            continue; // `macro_rules! name {` declares it
        }
        let close = (open..code.len())
            .find(|k| code[*k] == ')')
            .unwrap_or(code.len());
        let line = code[..open].iter().filter(|c| **c == '\n').count() + 1;
        for l in literals.iter().filter(|l| (open..close).contains(&l.at)) {
            out.push((line, l.text.clone()));
        }
    }
    out
}

/// The table named by the second argument of the call whose `(` is at `open`: the literal
/// there, else [`ANY_TABLE`].
fn second_argument(code: &[char], open: usize, literals: &[&Literal]) -> String {
    let mut depth = 0;
    let mut k = open;
    while k < code.len() {
        match code[k] {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return ANY_TABLE.to_string();
                }
            }
            ',' if depth == 1 => break,
            _ => {}
        }
        k += 1;
    }
    k += 1;
    while code.get(k).is_some_and(|c| c.is_whitespace()) {
        k += 1;
    }
    match literals.iter().find(|l| l.at == k) {
        Some(l) if !l.text.contains('{') => l.text.clone(),
        _ => ANY_TABLE.to_string(),
    }
}

// ---- the scanner's own checks -------------------------------------------------------------

fn scan(source: &str, helpers: Helpers, read_sql: bool) -> Vec<(usize, String)> {
    let (code, _) = strip_tests(&scan::code_only(source));
    writes_in(source, &code, helpers, read_sql)
}

#[test]
fn the_scanner_reads_statements_raw_strings_and_placeholders() {
    let src = "fn f(tx: &T) {\n\
               tx.execute(\"UPDATE billing_accounts SET x = 1\", [])?;\n\
               tx.execute_batch(r#\"INSERT INTO \"ledgers\" (a) VALUES (1);\n\
               DELETE FROM main.invoices WHERE id = 2\"#)?;\n\
               let s = format!(\"INSERT OR IGNORE INTO {table} VALUES (1)\");\n\
               let t = format!(\"UPDATE \\\"{table}\\\" SET a = 1\");\n\
               // UPDATE comments SET a = 1\n\
               let m = \"AFTER UPDATE ON t BEGIN\";\n\
               }\n";
    let found = scan(src, Helpers::Bare, false);
    let found: Vec<(usize, &str)> = found.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(
        found,
        [
            (2, "billing_accounts"),
            (3, "ledgers"),
            (4, "invoices"),
            (5, ANY_TABLE),
            (6, ANY_TABLE)
        ]
    );
}

#[test]
fn the_scanner_reads_helper_calls_and_skips_tests() {
    let src = "pub(crate) fn insert(tx: &T, table: &str) {}\n\
               fn f(tx: &T) {\n\
               insert(tx, \"reasons\", &[(\"id\", &1)])?;\n\
               super::update(\n    tx,\n    \"ledgers\", 1, &[])?;\n\
               crate::domain::insert(tx, name, &[])?;\n\
               map.insert(\"k\", 1);\n\
               }\n\
               #[cfg(test)]\nmod tests { fn g() { tx.execute(\"DELETE FROM invoices\", []); \
               insert(tx, \"ledgers\", &[]); } }\n";
    let found = scan(src, Helpers::Bare, false);
    let found: Vec<(usize, &str)> = found.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(found, [(3, "reasons"), (4, "ledgers"), (7, ANY_TABLE)]);
    // Outside the domain a bare `insert` is another function; `domain::insert` is the helper.
    let src = "fn f(tx: &T) {\n\
               insert(tx, &scope)?;\n\
               crate::domain::insert(tx, \"payment_applications\", &[])?;\n\
               }\n";
    let found = scan(src, Helpers::Qualified, false);
    assert_eq!(found, [(3, "payment_applications".to_string())]);
}

#[test]
fn surface_sql_is_found_and_a_stray_write_is_named() {
    let src = "const FROM: &str = \"payments t JOIN billing_accounts a ON a.id = t.x\";\n\
               const OK: &str = \"INSERT_SERVICES is a collector\";\n\
               const Q: &str = \"SELECT 1\";\n";
    let found = scan(src, Helpers::None, true);
    let found: Vec<(usize, &str)> = found.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(found, [(1, READ_SQL), (3, READ_SQL)]);

    let rules = Rules {
        owners: BTreeMap::from([("billing_accounts".into(), "domain::accounts".into())]),
        any_table: vec!["domain".into()],
    };
    let stray = Write {
        file: "shared/src/domain/invoices.rs".into(),
        line: 12,
        table: "billing_accounts".into(),
    };
    let why = forbidden(&stray, &rules).expect("invoices may not write billing_accounts");
    assert!(why.contains("whose owner is domain::accounts"), "{why}");
    let owner = Write {
        file: "shared/src/domain/accounts.rs".into(),
        ..stray.clone()
    };
    assert_eq!(forbidden(&owner, &rules), None);
    let generic = Write {
        file: "shared/src/domain/mod.rs".into(),
        table: ANY_TABLE.into(),
        ..stray.clone()
    };
    assert_eq!(forbidden(&generic, &rules), None);
    let generic_elsewhere = Write {
        file: "shared/src/fixtures/state.rs".into(),
        ..generic
    };
    assert!(forbidden(&generic_elsewhere, &rules).is_some());
    let surface = Write {
        file: "functions/billing/src/handlers.rs".into(),
        ..stray
    };
    assert!(forbidden(&surface, &rules).is_some());
}
