//! The source scanner the architecture tests share (`layers.rs` for the imports between
//! modules, `owners.rs` for the tables each module writes; `dependencies.rs` its file walk): Rust files under a folder, each
//! read as code with comments and literals blanked (every character keeping its index and
//! line), its string literals apart, and its test code (`#[cfg(test)]` items and the files
//! of `#[cfg(test)] mod x;`) left out.

#![allow(
    dead_code,
    reason = "each test binary that includes this module uses part of it"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A non-test Rust file: its path, its source, and its code without comments, literals and
/// test items ([`code_only`] then [`strip_tests`]).
pub struct Scanned {
    pub path: PathBuf,
    pub source: String,
    pub code: String,
}

/// Every non-test Rust file under `dir`, sorted: files declared `#[cfg(test)] mod x;` by a
/// file under `dir` are left out.
pub fn non_test_files(dir: &Path) -> Vec<Scanned> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut test_files = BTreeSet::new();
    let mut scanned = Vec::new();
    for path in files {
        let source = std::fs::read_to_string(&path).unwrap();
        let (code, test_mods) = strip_tests(&code_only(&source));
        for m in test_mods {
            let dir = module_dir(&path);
            test_files.insert(dir.join(format!("{m}.rs")));
            test_files.insert(dir.join(m).join("mod.rs"));
        }
        scanned.push(Scanned { path, source, code });
    }
    scanned.retain(|s| !test_files.contains(&s.path));
    scanned
}

/// `path` from `root`, with `/`.
pub fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// Line `line` (from 1) of `source`, trimmed: what a failure quotes.
pub fn line_text(source: &str, line: usize) -> String {
    source
        .lines()
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The `.rs` files under `dir` (appended to `out`), except under `target/`, `node_modules/`,
/// hidden directories and the directories of other packages (with a Cargo.toml of their own):
/// a package's own files, whether `dir` is its `src/` or its root.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            let skipped = name == "target" || name == "node_modules" || name.starts_with('.');
            if !skipped && !path.join("Cargo.toml").exists() {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The directory holding the child modules of the module in `file`.
pub fn module_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap().to_path_buf();
    match file.file_stem().unwrap().to_str().unwrap() {
        "mod" | "lib" | "main" => dir,
        stem => dir.join(stem),
    }
}

/// `store/replica.rs` -> `[store, replica]`; `domain/mod.rs` -> `[domain]`.
pub fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Identifiers, `::` and single punctuation characters, with their lines.
pub fn tokens(code: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((chars[start..i].iter().collect(), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(("::".to_string(), line));
            i += 2;
        } else {
            out.push((c.to_string(), line));
            i += 1;
        }
    }
    out
}

/// A string literal of a source file: where its opening quote is, its line, and its text as
/// written (escapes not decoded, so `\"` stays two characters and offsets stay lines).
#[derive(Debug, Clone)]
pub struct Literal {
    /// Index (in characters) of the opening quote.
    pub at: usize,
    /// Line of the opening quote, from 1.
    pub line: usize,
    pub text: String,
}

/// `source` with comments and the contents of string and character literals blanked
/// (newlines kept, so lines still count), leaving only code; every character keeps its
/// index, so a position in the code is the same position in the source.
pub fn code_only(source: &str) -> String {
    lex(source).0
}

/// [`code_only`], and the string literals it blanked (raw strings included).
pub fn lex(source: &str) -> (String, Vec<Literal>) {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut literals = Vec::new();
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"' | '#'))
            && {
                let mut k = i + 1;
                while c.get(k) == Some(&'#') {
                    k += 1;
                }
                c.get(k) == Some(&'"')
            }
        {
            // Raw string r#"..."#: ends at a quote followed by as many hashes.
            let mut hashes = 0;
            out.push(' ');
            i += 1;
            while c[i] == '#' {
                hashes += 1;
                out.push(' ');
                i += 1;
            }
            let (at, first_line) = (i, line);
            out.push('"');
            i += 1;
            let mut text = String::new();
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n(' ', hashes));
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(c[i] == '\n');
                text.push(c[i]);
                out.push(blank(c[i]));
                i += 1;
            }
            literals.push(Literal {
                at,
                line: first_line,
                text,
            });
        } else if c[i] == '"' {
            let (at, first_line) = (i, line);
            out.push('"');
            i += 1;
            let mut text = String::new();
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    text.push('\\');
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    line += usize::from(c[i] == '\n');
                    text.push(c[i]);
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
            literals.push(Literal {
                at,
                line: first_line,
                text,
            });
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            out.push_str("' ");
            i += 2;
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else {
            line += usize::from(c[i] == '\n');
            out.push(c[i]);
            i += 1;
        }
    }
    (out, literals)
}

/// `code` without its `#[cfg(test)]` items (blanked, newlines kept), and the names of the
/// modules declared `#[cfg(test)] mod name;` (their files are test code too).
pub fn strip_tests(code: &str) -> (String, Vec<String>) {
    let mut c: Vec<char> = code.chars().collect();
    let mut test_mods = Vec::new();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= c.len() {
        if c[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        // The item ends at its first `;` outside brackets, or at the `}` closing its body.
        let start = i;
        let mut k = i + marker.len();
        let mut depth = 0i32;
        let end = loop {
            if k >= c.len() {
                break c.len();
            }
            match c[k] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => break k + 1,
                '{' if depth == 0 => {
                    let mut braces = 0;
                    while k < c.len() {
                        match c[k] {
                            '{' => braces += 1,
                            '}' => {
                                braces -= 1;
                                if braces == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        k += 1;
                    }
                    break (k + 1).min(c.len());
                }
                _ => {}
            }
            k += 1;
        };
        let item: String = c[start + marker.len()..end].iter().collect();
        let words: Vec<(String, usize)> = tokens(&item);
        if let Some(at) = words.iter().position(|(w, _)| w == "mod") {
            if words.last().is_some_and(|(w, _)| w == ";") {
                if let Some((name, _)) = words.get(at + 1) {
                    test_mods.push(name.clone());
                }
            }
        }
        for ch in &mut c[start..end] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        i = end;
    }
    (c.into_iter().collect(), test_mods)
}
