//! The parser: `OR` binds loosest, then `AND`, then `NOT`; parentheses group. Recursive
//! descent with a depth bound, so hostile input cannot exhaust the stack.
//!
//! ```text
//! expr      := and_expr ( OR and_expr )*
//! and_expr  := unary ( AND unary )*
//! unary     := NOT unary | '(' expr ')' | predicate
//! predicate := field ( EQ|NEQ|LT|LTE|GT|GTE|LIKE ) 'value'
//!            | field IS [NOT] NULL
//!            | field IN '(' 'value' ( ',' 'value' )* ')'
//! ```

use super::ast::{CmpOp, Expr, Field, Value};
use super::lex::{tokenize, Token, TokenKind};
use super::{QueryError, MAX_DEPTH, MAX_FILTER_CHARS, MAX_IN_VALUES};

/// Parses a filter expression.
pub fn parse(input: &str) -> Result<Expr, QueryError> {
    let length = input.chars().count();
    if length > MAX_FILTER_CHARS {
        return Err(QueryError::new(format!(
            "filter is {length} characters long; at most {MAX_FILTER_CHARS} are allowed"
        )));
    }
    let tokens = tokenize(input)?;
    if tokens.is_empty() {
        return Err(QueryError::at(1, "filter is empty"));
    }
    let mut parser = Parser {
        tokens,
        next: 0,
        end: length + 1,
    };
    let expr = parser.expr(0)?;
    match parser.peek() {
        None => Ok(expr),
        Some(Token {
            kind: TokenKind::Close,
            pos,
        }) => Err(QueryError::at(
            *pos,
            "unbalanced parenthesis: ')' without a matching '('",
        )),
        Some(t) => Err(QueryError::at(
            t.pos,
            format!("expected AND, OR or the end, found {}", t.kind.describe()),
        )),
    }
}

struct Parser {
    tokens: Vec<Token>,
    next: usize,
    end: usize,
}

fn is_keyword(word: &str, keyword: &str) -> bool {
    word.eq_ignore_ascii_case(keyword)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next)
    }

    fn bump(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.next).cloned();
        self.next += 1;
        t
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token { kind: TokenKind::Word(w), .. }) if is_keyword(w, keyword))
    }

    /// The next token, or an error saying what was expected at the end of the input.
    fn expect_token(&mut self, expected: &str) -> Result<Token, QueryError> {
        self.bump().ok_or_else(|| {
            QueryError::at(
                self.end,
                format!("expected {expected}, found the end of the filter"),
            )
        })
    }

    fn check_depth(&self, depth: usize, pos: usize) -> Result<(), QueryError> {
        if depth > MAX_DEPTH {
            Err(QueryError::at(
                pos,
                format!("filter is nested too deeply (at most {MAX_DEPTH} levels)"),
            ))
        } else {
            Ok(())
        }
    }

    fn expr(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let mut left = self.and_expr(depth)?;
        while self.peek_keyword("OR") {
            self.bump();
            let right = self.and_expr(depth)?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let mut left = self.unary(depth)?;
        while self.peek_keyword("AND") {
            self.bump();
            let right = self.unary(depth)?;
            left = Expr::and(left, right);
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let token = self.expect_token("a field name, NOT or '('")?;
        match token.kind {
            TokenKind::Word(ref w) if is_keyword(w, "NOT") => {
                self.check_depth(depth + 1, token.pos)?;
                Ok(Expr::Not(Box::new(self.unary(depth + 1)?)))
            }
            TokenKind::Open => {
                self.check_depth(depth + 1, token.pos)?;
                let inner = self.expr(depth + 1)?;
                match self.bump() {
                    Some(Token {
                        kind: TokenKind::Close,
                        ..
                    }) => Ok(inner),
                    Some(t) => Err(QueryError::at(
                        t.pos,
                        format!("expected AND, OR or ')', found {}", t.kind.describe()),
                    )),
                    None => Err(QueryError::at(
                        token.pos,
                        "unbalanced parenthesis: the '(' opened here is never closed",
                    )),
                }
            }
            TokenKind::Word(name) => self.predicate(Field {
                name,
                pos: token.pos,
            }),
            other => Err(QueryError::at(
                token.pos,
                format!(
                    "expected a field name, NOT or '(', found {}",
                    other.describe()
                ),
            )),
        }
    }

    fn predicate(&mut self, field: Field) -> Result<Expr, QueryError> {
        let op = self.expect_token("an operator (EQ, NEQ, LT, LTE, GT, GTE, LIKE, IS, IN)")?;
        let TokenKind::Word(word) = &op.kind else {
            return Err(QueryError::at(
                op.pos,
                format!(
                    "expected an operator after '{}', found {}",
                    field.name,
                    op.kind.describe()
                ),
            ));
        };
        if let Some(cmp) = CmpOp::from_keyword(word) {
            let value = self.value(cmp.keyword())?;
            return Ok(Expr::Compare {
                field,
                op: cmp,
                value,
            });
        }
        if is_keyword(word, "IS") {
            let negated = self.peek_keyword("NOT");
            if negated {
                self.bump();
            }
            let null = self.expect_token("NULL")?;
            return match null.kind {
                TokenKind::Word(ref w) if is_keyword(w, "NULL") => {
                    Ok(Expr::IsNull { field, negated })
                }
                other => Err(QueryError::at(
                    null.pos,
                    format!("expected NULL, found {}", other.describe()),
                )),
            };
        }
        if is_keyword(word, "IN") {
            return self.in_list(field, op.pos);
        }
        Err(QueryError::at(
            op.pos,
            format!(
                "unknown operator '{word}' (expected EQ, NEQ, LT, LTE, GT, GTE, LIKE, IS NULL, IS NOT NULL or IN)"
            ),
        ))
    }

    fn value(&mut self, after: &str) -> Result<Value, QueryError> {
        let t = self.expect_token(&format!("a quoted value after {after}"))?;
        match t.kind {
            TokenKind::Quoted(text) => Ok(Value { text, pos: t.pos }),
            other => Err(QueryError::at(
                t.pos,
                format!(
                    "expected a value in single quotes after {after}, found {}",
                    other.describe()
                ),
            )),
        }
    }

    fn in_list(&mut self, field: Field, in_pos: usize) -> Result<Expr, QueryError> {
        let open = self.expect_token("'(' after IN")?;
        if open.kind != TokenKind::Open {
            return Err(QueryError::at(
                open.pos,
                format!("expected '(' after IN, found {}", open.kind.describe()),
            ));
        }
        let mut values = vec![self.value("IN (")?];
        loop {
            let t = self.expect_token("',' or ')' in the IN list")?;
            match t.kind {
                TokenKind::Comma => {
                    values.push(self.value("','")?);
                    if values.len() > MAX_IN_VALUES {
                        return Err(QueryError::at(
                            in_pos,
                            format!("IN takes at most {MAX_IN_VALUES} values"),
                        ));
                    }
                }
                TokenKind::Close => break,
                other => {
                    return Err(QueryError::at(
                        t.pos,
                        format!(
                            "expected ',' or ')' in the IN list, found {}",
                            other.describe()
                        ),
                    ))
                }
            }
        }
        Ok(Expr::In { field, values })
    }
}
