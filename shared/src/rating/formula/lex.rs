//! Stage 1: characters to tokens, each with its 1-based character position. One pass, no
//! backtracking; numbers become exact decimals here (too many digits is an error, never a
//! silent rounding).

use super::FormulaError;
use rust_decimal::Decimal;

/// A token's kind.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(Decimal),
    Text(String),
    /// A name, keyword or function, lowercased.
    Name(String),
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// After the last character.
    End,
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) pos: usize,
}

/// Tokens of `source`, ending with [`Tok::End`].
pub(super) fn lex(source: &str) -> Result<Vec<Token>, FormulaError> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let (tok, len) = match c {
            '(' => (Tok::LParen, 1),
            ')' => (Tok::RParen, 1),
            ',' => (Tok::Comma, 1),
            '+' => (Tok::Plus, 1),
            '-' => (Tok::Minus, 1),
            '*' => (Tok::Star, 1),
            '/' => (Tok::Slash, 1),
            '<' if next == Some('=') => (Tok::Le, 2),
            '<' => (Tok::Lt, 1),
            '>' if next == Some('=') => (Tok::Ge, 2),
            '>' => (Tok::Gt, 1),
            '=' if next == Some('=') => (Tok::Eq, 2),
            '!' if next == Some('=') => (Tok::Ne, 2),
            '=' => return Err(FormulaError::new(pos, "'=' alone: compare with '=='")),
            '!' => return Err(FormulaError::new(pos, "'!' alone: use 'not' or '!='")),
            '\'' => text(&chars, i)?,
            '0'..='9' => number(&chars, i)?,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let len = chars[i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .count();
                let word: String = chars[i..i + len].iter().collect();
                (Tok::Name(word.to_ascii_lowercase()), len)
            }
            other => {
                return Err(FormulaError::new(
                    pos,
                    format!("unexpected character '{}'", other.escape_debug()),
                ))
            }
        };
        out.push(Token { tok, pos });
        i += len;
    }
    out.push(Token {
        tok: Tok::End,
        pos: chars.len() + 1,
    });
    Ok(out)
}

/// A quoted text starting at `start`; `''` inside is one quote.
fn text(chars: &[char], start: usize) -> Result<(Tok, usize), FormulaError> {
    let mut value = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i) {
            Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                value.push('\'');
                i += 2;
            }
            Some('\'') => return Ok((Tok::Text(value), i + 1 - start)),
            Some(c) => {
                value.push(*c);
                i += 1;
            }
            None => {
                return Err(FormulaError::new(
                    start + 1,
                    "text without its closing quote",
                ))
            }
        }
    }
}

/// A number `digits ["." digits]` starting at `start`, as an exact decimal.
fn number(chars: &[char], start: usize) -> Result<(Tok, usize), FormulaError> {
    let digits = |from: usize| {
        chars
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut len = digits(start);
    if chars.get(start + len) == Some(&'.') {
        let fraction = digits(start + len + 1);
        if fraction == 0 {
            return Err(FormulaError::new(
                start + len + 1, // the point's own (1-based) position
                "a decimal point must be followed by digits",
            ));
        }
        len += 1 + fraction;
    }
    let text: String = chars[start..start + len].iter().collect();
    let value = Decimal::from_str_exact(&text).map_err(|_| {
        FormulaError::new(
            start + 1,
            format!("the number {text} has more digits than an exact decimal holds (28)"),
        )
    })?;
    Ok((Tok::Num(value), len))
}
