//! Stage 2: tokens to a tree, by recursive descent with one token of lookahead (each token is
//! looked at a bounded number of times: linear). Chains of one precedence level (`a + b - c`,
//! `x and y and z`) become one node with a list of operands, so the tree is no deeper than the
//! formula's nesting, which [`MAX_DEPTH`] bounds.

use super::lex::{Tok, Token};
use super::{FormulaError, MAX_DEPTH};
use rust_decimal::Decimal;

/// A tree node and the 1-based character position it starts at (for an operator chain: its
/// first operand's).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    pub(super) pos: usize,
    pub(super) kind: Kind,
}

/// The names a formula may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Var {
    Amount,
    UsageAmount,
    ReferenceId,
    SequenceId,
    ServiceResourceIdentifier,
    UsageUom,
}

/// Every name, as written.
pub(super) const VARS: &[(&str, Var)] = &[
    ("amount", Var::Amount),
    ("usage_amount", Var::UsageAmount),
    ("reference_id", Var::ReferenceId),
    ("sequence_id", Var::SequenceId),
    (
        "service_resource_identifier",
        Var::ServiceResourceIdentifier,
    ),
    ("usage_uom", Var::UsageUom),
];

/// The fixed list of functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Min,
    Max,
    Abs,
    Floor,
    Ceil,
    Round,
    If,
    StartsWith,
}

/// Every function, as written.
pub(super) const FUNCS: &[(&str, Func)] = &[
    ("min", Func::Min),
    ("max", Func::Max),
    ("abs", Func::Abs),
    ("floor", Func::Floor),
    ("ceil", Func::Ceil),
    ("round", Func::Round),
    ("if", Func::If),
    ("starts_with", Func::StartsWith),
];

/// `+ - * /`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Num(Decimal),
    Text(String),
    Bool(bool),
    Var(Var),
    Neg(Box<Node>),
    Not(Box<Node>),
    /// The first operand, then (operator, its position, operand) left to right.
    Arith(Box<Node>, Vec<(Arith, usize, Node)>),
    /// Left, operator, its position, right.
    Compare(Box<Node>, Cmp, usize, Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
    Call(Func, Vec<Node>),
}

/// The tree of a token list, and its number of nodes.
pub(super) fn parse(tokens: Vec<Token>) -> Result<(Node, usize), FormulaError> {
    let mut p = Parser {
        tokens,
        at: 0,
        depth: 0,
        nodes: 0,
    };
    let root = p.or()?;
    let end = p.peek();
    if end.tok != Tok::End {
        let message = format!(
            "expected an operator or the end, found {}",
            describe(&end.tok)
        );
        return Err(FormulaError::new(end.pos, message));
    }
    Ok((root, p.nodes))
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
    nodes: usize,
}

/// A token as a message names it.
fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Num(n) => format!("the number {n}"),
        Tok::Text(t) => format!("the text '{t}'"),
        Tok::Name(n) => format!("'{n}'"),
        Tok::LParen => "'('".into(),
        Tok::RParen => "')'".into(),
        Tok::Comma => "','".into(),
        Tok::Plus => "'+'".into(),
        Tok::Minus => "'-'".into(),
        Tok::Star => "'*'".into(),
        Tok::Slash => "'/'".into(),
        Tok::Lt => "'<'".into(),
        Tok::Le => "'<='".into(),
        Tok::Gt => "'>'".into(),
        Tok::Ge => "'>='".into(),
        Tok::Eq => "'=='".into(),
        Tok::Ne => "'!='".into(),
        Tok::End => "the end".into(),
    }
}

impl Parser {
    /// The current token (the list always ends with `End`, which is never consumed).
    fn peek(&self) -> Token {
        self.tokens
            .get(self.at)
            .or_else(|| self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                tok: Tok::End,
                pos: 1,
            })
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.tok != Tok::End {
            self.at += 1;
        }
        t
    }

    fn is_keyword(&self, word: &str) -> bool {
        matches!(&self.peek().tok, Tok::Name(n) if n == word)
    }

    fn node(&mut self, pos: usize, kind: Kind) -> Node {
        self.nodes += 1;
        Node { pos, kind }
    }

    /// One level deeper; refused beyond [`MAX_DEPTH`].
    fn enter(&mut self, pos: usize) -> Result<(), FormulaError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FormulaError::new(
                pos,
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<(), FormulaError> {
        let t = self.bump();
        if t.tok == tok {
            Ok(())
        } else {
            Err(FormulaError::new(
                t.pos,
                format!("expected {what}, found {}", describe(&t.tok)),
            ))
        }
    }

    fn or(&mut self) -> Result<Node, FormulaError> {
        let first = self.and()?;
        if !self.is_keyword("or") {
            return Ok(first);
        }
        let pos = first.pos;
        let mut operands = vec![first];
        while self.is_keyword("or") {
            self.bump();
            operands.push(self.and()?);
        }
        Ok(self.node(pos, Kind::Or(operands)))
    }

    fn and(&mut self) -> Result<Node, FormulaError> {
        let first = self.not()?;
        if !self.is_keyword("and") {
            return Ok(first);
        }
        let pos = first.pos;
        let mut operands = vec![first];
        while self.is_keyword("and") {
            self.bump();
            operands.push(self.not()?);
        }
        Ok(self.node(pos, Kind::And(operands)))
    }

    fn not(&mut self) -> Result<Node, FormulaError> {
        if !self.is_keyword("not") {
            return self.comparison();
        }
        let pos = self.bump().pos;
        self.enter(pos)?;
        let operand = self.not()?;
        self.leave();
        Ok(self.node(pos, Kind::Not(Box::new(operand))))
    }

    fn comparison(&mut self) -> Result<Node, FormulaError> {
        let left = self.sum()?;
        let Some(op) = cmp_op(&self.peek().tok) else {
            return Ok(left);
        };
        let op_pos = self.bump().pos;
        let right = self.sum()?;
        let next = self.peek();
        if cmp_op(&next.tok).is_some() {
            return Err(FormulaError::new(
                next.pos,
                "comparisons do not chain: join them with 'and'",
            ));
        }
        let pos = left.pos;
        Ok(self.node(
            pos,
            Kind::Compare(Box::new(left), op, op_pos, Box::new(right)),
        ))
    }

    fn sum(&mut self) -> Result<Node, FormulaError> {
        self.chain(Parser::product, |t| match t {
            Tok::Plus => Some(Arith::Add),
            Tok::Minus => Some(Arith::Sub),
            _ => None,
        })
    }

    fn product(&mut self) -> Result<Node, FormulaError> {
        self.chain(Parser::unary, |t| match t {
            Tok::Star => Some(Arith::Mul),
            Tok::Slash => Some(Arith::Div),
            _ => None,
        })
    }

    /// `operand (op operand)*` as one node.
    fn chain(
        &mut self,
        operand: fn(&mut Parser) -> Result<Node, FormulaError>,
        op: fn(&Tok) -> Option<Arith>,
    ) -> Result<Node, FormulaError> {
        let first = operand(self)?;
        let mut rest = Vec::new();
        while let Some(o) = op(&self.peek().tok) {
            let op_pos = self.bump().pos;
            rest.push((o, op_pos, operand(self)?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let pos = first.pos;
        Ok(self.node(pos, Kind::Arith(Box::new(first), rest)))
    }

    fn unary(&mut self) -> Result<Node, FormulaError> {
        if self.peek().tok != Tok::Minus {
            return self.primary();
        }
        let pos = self.bump().pos;
        self.enter(pos)?;
        let operand = self.unary()?;
        self.leave();
        Ok(self.node(pos, Kind::Neg(Box::new(operand))))
    }

    fn primary(&mut self) -> Result<Node, FormulaError> {
        let t = self.bump();
        let pos = t.pos;
        match t.tok {
            Tok::Num(n) => Ok(self.node(pos, Kind::Num(n))),
            Tok::Text(s) => Ok(self.node(pos, Kind::Text(s))),
            Tok::LParen => {
                self.enter(pos)?;
                let inner = self.or()?;
                self.expect(Tok::RParen, "')'")?;
                self.leave();
                Ok(inner)
            }
            Tok::Name(name) => self.named(pos, &name),
            other => Err(FormulaError::new(
                pos,
                format!("expected a value, found {}", describe(&other)),
            )),
        }
    }

    /// A keyword value, a name, or a function call.
    fn named(&mut self, pos: usize, name: &str) -> Result<Node, FormulaError> {
        match name {
            "true" => return Ok(self.node(pos, Kind::Bool(true))),
            "false" => return Ok(self.node(pos, Kind::Bool(false))),
            "and" | "or" | "not" => {
                return Err(FormulaError::new(
                    pos,
                    format!("expected a value, found '{name}'"),
                ))
            }
            _ => {}
        }
        if self.peek().tok != Tok::LParen {
            return match VARS.iter().find(|(n, _)| *n == name) {
                Some((_, var)) => Ok(self.node(pos, Kind::Var(*var))),
                None => Err(FormulaError::new(
                    pos,
                    format!(
                        "unknown name '{name}' (names: {})",
                        VARS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ),
                )),
            };
        }
        let Some((_, func)) = FUNCS.iter().find(|(n, _)| *n == name) else {
            return Err(FormulaError::new(
                pos,
                format!(
                    "unknown function '{name}' (functions: {})",
                    FUNCS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        self.bump();
        self.enter(pos)?;
        let mut args = vec![self.or()?];
        while self.peek().tok == Tok::Comma {
            self.bump();
            args.push(self.or()?);
        }
        self.expect(Tok::RParen, "',' or ')'")?;
        self.leave();
        Ok(self.node(pos, Kind::Call(*func, args)))
    }
}

fn cmp_op(tok: &Tok) -> Option<Cmp> {
    Some(match tok {
        Tok::Lt => Cmp::Lt,
        Tok::Le => Cmp::Le,
        Tok::Gt => Cmp::Gt,
        Tok::Ge => Cmp::Ge,
        Tok::Eq => Cmp::Eq,
        Tok::Ne => Cmp::Ne,
        _ => return None,
    })
}
