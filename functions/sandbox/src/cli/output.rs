//! What the command line prints: aligned tables for people, JSON for scripts, shell-quoted
//! `export` lines for `eval`. Everything goes to stdout through [`out`], which ignores a
//! closed pipe (`sandbox requests T | head` must not panic).

use serde_json::Value;
use std::io::Write;

/// Writes `text` and a newline to stdout; a closed stdout is not an error.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

/// `value` pretty-printed (what `--json` prints).
pub fn json(value: &Value) {
    out(&serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()));
}

/// A JSON member as display text: strings bare, null and absent as `-`.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `rows` under `headers`, columns padded to their widest cell (by characters).
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut text = line(headers.to_vec());
    for row in rows {
        text.push('\n');
        text.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    text
}

/// The rows of `items` (JSON objects) with the members `fields`, under those headers.
pub fn object_table(items: &[Value], fields: &[&str]) -> String {
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| fields.iter().map(|f| cell(&item[*f])).collect())
        .collect();
    table(fields, &rows)
}

/// `text` as one POSIX shell word: single-quoted, a quote inside written `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(&["a", "bb"], &[vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "a    bb\nxxx  y");
    }
}
