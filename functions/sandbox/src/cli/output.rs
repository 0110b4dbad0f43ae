//! What the command line prints: aligned tables for people, JSON for scripts, shell-quoted
//! `export` lines for `eval`. Everything goes to stdout through [`out`], which ignores a
//! closed pipe (`sandbox requests T | head` must not panic).
//!
//! Nothing a server answered reaches the terminal raw: in tables and messages its control
//! characters (C0, DEL, C1) are written as Rust escapes (`\u{1b}`, see [`clean`]); in `--json`
//! as JSON escapes (serde escapes C0; [`json_text`] escapes DEL and C1 too, which JSON allows
//! raw but a terminal may act on); `export` lines carry none (credentials with control
//! characters are refused before printing, see `shapes::credential`).

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
    out(&json_text(value, true));
}

/// `value` as JSON text, pretty or on one line, with DEL and the C1 controls escaped too
/// (serde_json escapes only C0). They can only stand inside strings, so `\u00XX` there means
/// the same string.
pub fn json_text(value: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_else(|_| value.to_string());
    if !text.chars().any(char::is_control) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        // Outside strings serde writes only '\n' and spaces; inside, C0 is escaped already.
        if c.is_control() && c != '\n' {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// `text` with every control character (C0 including line ends and tabs, DEL, C1) written
/// as its Rust escape, e.g. ESC as `\u{1b}`: what a server sent, made safe for a terminal.
pub fn clean(text: &str) -> String {
    escape(text, false)
}

/// [`clean`] but line ends kept: for the command line's own messages, which may quote a
/// server (already cleaned) and span lines.
pub fn clean_message(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && !(keep_newlines && c == '\n') {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The first `max` characters of `text` (cleaned), `...` when there were more.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    let more = if chars.next().is_some() { "..." } else { "" };
    format!("{}{more}", clean(&head))
}

/// `rows` under `headers`, columns padded to their widest cell (by characters); every cell
/// [`clean`]ed.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
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
    for row in &rows {
        text.push('\n');
        text.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    text
}

/// A typed answer shown as a table row: its column names and its cells (`None` for a member
/// the answer leaves out or null).
pub trait Row {
    const FIELDS: &'static [&'static str];
    fn cells(&self) -> Vec<Option<String>>;
}

/// `items` as a table of their [`Row::FIELDS`], an absent cell shown `-`.
pub fn rows<T: Row>(items: &[T]) -> String {
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| {
            item.cells()
                .into_iter()
                .map(|c| c.unwrap_or_else(|| "-".into()))
                .collect()
        })
        .collect();
    table(T::FIELDS, &rows)
}

/// One item as `field  value` lines, absent members left out.
pub fn fields<T: Row>(item: &T) -> String {
    let rows: Vec<Vec<String>> = T::FIELDS
        .iter()
        .zip(item.cells())
        .filter_map(|(f, c)| c.map(|c| vec![(*f).to_string(), c]))
        .collect();
    table(&["field", "value"], &rows)
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

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(clean("a\u{1b}[31mb"), r"a\u{1b}[31mb");
        assert_eq!(
            clean("\u{7}\u{7f}\u{9b}\t\n"),
            r"\u{7}\u{7f}\u{9b}\u{9}\u{a}"
        );
        assert_eq!(clean("plain é ü 日本"), "plain é ü 日本");
        assert_eq!(clean_message("one\ntwo\u{1b}"), "one\ntwo\\u{1b}");
        assert_eq!(excerpt("abcdef", 3), "abc...");
        assert_eq!(excerpt("ab\u{1b}", 3), r"ab\u{1b}");
        // A table of escaped cells stays one line per row.
        let t = table(&["n"], &[vec!["a\nb".into()]]);
        assert_eq!(t, "n\na\\u{a}b");
    }

    #[test]
    fn json_text_escapes_del_and_c1_and_stays_the_same_json() {
        let v = serde_json::json!({ "n\u{9b}": ["\u{1b}[2J\u{7f}\u{85}", "é\n"] });
        for pretty in [true, false] {
            let text = json_text(&v, pretty);
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        }
    }
}
