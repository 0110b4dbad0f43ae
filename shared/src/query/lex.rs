//! Tokens of the filter language: words (field names and keywords, any case), quoted values
//! (a quote inside a value is written doubled: `'O''Brien'`), parentheses and commas.

use super::QueryError;

/// One token with its 1-based character position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What was read.
    pub kind: TokenKind,
    /// 1-based character position of its first character.
    pub pos: usize,
}

/// The kinds of token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// A bare word: letters, digits, `_`, `.` and `-` (field names and keywords).
    Word(String),
    /// A single-quoted value, unquoted.
    Quoted(String),
    /// `(`.
    Open,
    /// `)`.
    Close,
    /// `,`.
    Comma,
}

impl TokenKind {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Word(w) => format!("'{w}'"),
            TokenKind::Quoted(v) => format!("the value '{}'", v.replace('\'', "''")),
            TokenKind::Open => "'('".into(),
            TokenKind::Close => "')'".into(),
            TokenKind::Comma => "','".into(),
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'
}

/// Splits `input` into tokens; an unterminated quote or a stray character is an error naming
/// its position.
pub fn tokenize(input: &str) -> Result<Vec<Token>, QueryError> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let kind = match c {
            '(' => {
                i += 1;
                TokenKind::Open
            }
            ')' => {
                i += 1;
                TokenKind::Close
            }
            ',' => {
                i += 1;
                TokenKind::Comma
            }
            '\'' => {
                let mut text = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => {
                            return Err(QueryError::at(
                                pos,
                                "unbalanced quote: the value opened here is never closed",
                            ))
                        }
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            text.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&ch) => {
                            text.push(ch);
                            i += 1;
                        }
                    }
                }
                TokenKind::Quoted(text)
            }
            c if is_word_char(c) => {
                let start = i;
                while i < chars.len() && is_word_char(chars[i]) {
                    i += 1;
                }
                TokenKind::Word(chars[start..i].iter().collect())
            }
            other => {
                return Err(QueryError::at(
                    pos,
                    format!("unexpected character '{other}' (values must be in single quotes)"),
                ))
            }
        };
        tokens.push(Token { kind, pos });
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_quotes_and_positions() {
        let t = tokenize("name EQ 'O''Brien'").unwrap();
        assert_eq!(
            t[0],
            Token {
                kind: TokenKind::Word("name".into()),
                pos: 1
            }
        );
        assert_eq!(
            t[2],
            Token {
                kind: TokenKind::Quoted("O'Brien".into()),
                pos: 9
            }
        );
    }

    #[test]
    fn unterminated_quote_points_at_its_start() {
        let e = tokenize("a EQ 'x").unwrap_err();
        assert_eq!(e.position, Some(6));
    }

    #[test]
    fn stray_character() {
        let e = tokenize("a = 'x'").unwrap_err();
        assert_eq!(e.position, Some(3));
    }
}
