//! The condition of a usage rule: the unit family, an amount window, a time window and an
//! optional attribute match on the event.
//!
//! Attribute match syntax (the predicate form of the Surface B filter language, joined by AND):
//! `<field> <op> '<value>'` with op EQ, NEQ or LIKE (`%` any run, `_` one character, ASCII
//! case-insensitive as in SQL), or `<field> IS NULL` / `<field> IS NOT NULL`. Fields:
//! reference_id, sequence_id, service_resource_identifier, usage_uom. Inside a value, `''` is
//! a quote.

use super::uom;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

/// The event attributes a rule may match on.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    /// The caller's reference id.
    pub reference_id: Option<&'a str>,
    /// The caller's sequence id.
    pub sequence_id: Option<&'a str>,
    /// The SRID.
    pub service_resource_identifier: &'a str,
    /// The event's own unit.
    pub usage_uom: &'a str,
}

/// Fields an attribute match may name.
pub const MATCH_FIELDS: &[&str] = &[
    "reference_id",
    "sequence_id",
    "service_resource_identifier",
    "usage_uom",
];

impl Attributes<'_> {
    fn get(&self, field: &str) -> Option<&str> {
        match field {
            "reference_id" => self.reference_id,
            "sequence_id" => self.sequence_id,
            "service_resource_identifier" => Some(self.service_resource_identifier),
            "usage_uom" => Some(self.usage_uom),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    Neq(String),
    Like(String),
    IsNull,
    IsNotNull,
}

/// A parsed attribute match: every predicate must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeMatch {
    predicates: Vec<(String, Op)>,
}

impl AttributeMatch {
    /// Parses an attribute match; the error says what was expected where.
    pub fn parse(text: &str) -> Result<AttributeMatch, String> {
        let tokens = tokenize(text)?;
        let mut predicates = Vec::new();
        let mut it = tokens.into_iter().peekable();
        loop {
            let field = match it.next() {
                Some(Token::Word(w)) if MATCH_FIELDS.contains(&w.as_str()) => w,
                other => {
                    return Err(format!(
                        "attribute match: expected one of {}, found {}",
                        MATCH_FIELDS.join(", "),
                        describe(&other)
                    ))
                }
            };
            let op = match it.next() {
                Some(Token::Word(w)) => w.to_ascii_uppercase(),
                other => {
                    return Err(format!(
                        "attribute match: expected an operator after {field}, found {}",
                        describe(&other)
                    ))
                }
            };
            let op = match op.as_str() {
                "EQ" | "NEQ" | "LIKE" => {
                    let value = match it.next() {
                        Some(Token::Quoted(v)) => v,
                        other => {
                            return Err(format!(
                                "attribute match: expected a quoted value after {op}, found {}",
                                describe(&other)
                            ))
                        }
                    };
                    match op.as_str() {
                        "EQ" => Op::Eq(value),
                        "NEQ" => Op::Neq(value),
                        _ => Op::Like(value),
                    }
                }
                "IS" => {
                    let not =
                        matches!(it.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case("NOT"));
                    if not {
                        it.next();
                    }
                    match it.next() {
                        Some(Token::Word(w)) if w.eq_ignore_ascii_case("NULL") => {}
                        other => {
                            return Err(format!(
                                "attribute match: expected NULL, found {}",
                                describe(&other)
                            ))
                        }
                    }
                    if not {
                        Op::IsNotNull
                    } else {
                        Op::IsNull
                    }
                }
                other => {
                    return Err(format!(
                        "attribute match: expected EQ, NEQ, LIKE or IS, found '{other}'"
                    ))
                }
            };
            predicates.push((field, op));
            match it.next() {
                None => break,
                Some(Token::Word(w)) if w.eq_ignore_ascii_case("AND") => continue,
                other => {
                    return Err(format!(
                        "attribute match: expected AND or the end, found {}",
                        describe(&other)
                    ))
                }
            }
        }
        Ok(AttributeMatch { predicates })
    }

    /// Whether every predicate holds for `attrs`.
    pub fn holds(&self, attrs: &Attributes<'_>) -> bool {
        self.predicates.iter().all(|(field, op)| {
            let v = attrs.get(field);
            match op {
                Op::Eq(x) => v == Some(x.as_str()),
                Op::Neq(x) => v.is_some_and(|v| v != x),
                Op::Like(p) => v.is_some_and(|v| like(v, p)),
                Op::IsNull => v.is_none(),
                Op::IsNotNull => v.is_some(),
            }
        })
    }
}

enum Token {
    Word(String),
    Quoted(String),
}

fn describe(t: &Option<Token>) -> String {
    match t {
        None => "the end".into(),
        Some(Token::Word(w)) => format!("'{w}'"),
        Some(Token::Quoted(q)) => format!("the value '{q}'"),
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '\'' {
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some((_, '\'')) if matches!(chars.peek(), Some((_, '\''))) => {
                        chars.next();
                        value.push('\'');
                    }
                    Some((_, '\'')) => break,
                    Some((_, ch)) => value.push(ch),
                    None => {
                        return Err(format!(
                            "attribute match: unterminated value starting at {pos}"
                        ))
                    }
                }
            }
            out.push(Token::Quoted(value));
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut word = c.to_string();
            while let Some((_, ch)) = chars.peek() {
                if ch.is_ascii_alphanumeric() || *ch == '_' {
                    word.push(*ch);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Token::Word(word));
        } else {
            return Err(format!(
                "attribute match: unexpected character '{c}' at {pos}"
            ));
        }
    }
    Ok(out)
}

/// SQL LIKE: `%` any run, `_` one character, ASCII case-insensitive.
fn like(value: &str, pattern: &str) -> bool {
    let v: Vec<char> = value.chars().map(|c| c.to_ascii_lowercase()).collect();
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    // Iterative wildcard matching with backtracking to the last '%'.
    let (mut vi, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        if pi < p.len() && (p[pi] == '_' || p[pi] == v[vi]) {
            vi += 1;
            pi += 1;
        } else if pi < p.len() && p[pi] == '%' {
            star = Some((pi, vi));
            pi += 1;
        } else if let Some((sp, sv)) = star {
            pi = sp + 1;
            vi = sv + 1;
            star = Some((sp, sv + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '%' {
        pi += 1;
    }
    pi == p.len()
}

/// When a rule applies to an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The rule's unit; the event's unit must be of the same family.
    pub uom: String,
    /// Smallest amount (in `uom`), inclusive.
    pub min_amount: Option<Decimal>,
    /// Largest amount (in `uom`), exclusive.
    pub max_amount: Option<Decimal>,
    /// Events starting before this do not match.
    pub valid_from: Option<DateTime<Utc>>,
    /// Events starting at or after this do not match.
    pub valid_to: Option<DateTime<Utc>>,
    /// Optional attribute match.
    pub attribute_match: Option<AttributeMatch>,
}

impl Condition {
    /// The event's amount in the rule's unit, when the units share a family.
    pub fn convert(&self, amount: Decimal, event_uom: &str) -> Option<Decimal> {
        uom::convert(amount, event_uom, &self.uom)
    }

    /// Whether the condition holds for an event whose amount, converted into the rule's
    /// unit, is `amount`.
    pub fn holds(&self, amount: Decimal, start: DateTime<Utc>, attrs: &Attributes<'_>) -> bool {
        self.min_amount.is_none_or(|m| amount >= m)
            && self.max_amount.is_none_or(|m| amount < m)
            && self.valid_from.is_none_or(|f| start >= f)
            && self.valid_to.is_none_or(|t| start < t)
            && self.attribute_match.as_ref().is_none_or(|m| m.holds(attrs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(reference_id: Option<&'a str>) -> Attributes<'a> {
        Attributes {
            reference_id,
            sequence_id: Some("7"),
            service_resource_identifier: "srv-1",
            usage_uom: "HOUR",
        }
    }

    #[test]
    fn like_matches_sql_style() {
        assert!(like("roaming-eu", "roam%"));
        assert!(like("ROAMING", "roam%"));
        assert!(like("abc", "a_c"));
        assert!(!like("abcd", "a_c"));
        assert!(like("abc", "%"));
        assert!(like("a%c", "a%c"));
        assert!(like("xxabyyab", "%ab"));
        assert!(!like("abx", "%ab"));
    }

    #[test]
    fn attribute_match_parses_and_holds() {
        let m = AttributeMatch::parse("reference_id LIKE 'roam%' AND usage_uom EQ 'HOUR'").unwrap();
        assert!(m.holds(&attrs(Some("roam-1"))));
        assert!(!m.holds(&attrs(Some("home-1"))));
        assert!(!m.holds(&attrs(None)));
        let n = AttributeMatch::parse("reference_id is null").unwrap();
        assert!(n.holds(&attrs(None)));
        let q = AttributeMatch::parse("reference_id EQ 'O''Brien'").unwrap();
        assert!(q.holds(&attrs(Some("O'Brien"))));
        let neq = AttributeMatch::parse("sequence_id NEQ '7'").unwrap();
        assert!(!neq.holds(&attrs(None)));
    }

    #[test]
    fn attribute_match_errors_say_where() {
        for bad in [
            "",
            "price EQ '1'",
            "reference_id",
            "reference_id GT '1'",
            "reference_id EQ 1",
            "reference_id EQ 'x' OR usage_uom EQ 'HOUR'",
            "reference_id EQ 'open",
            "reference_id = 'x'",
        ] {
            assert!(AttributeMatch::parse(bad).is_err(), "{bad}");
        }
    }
}
