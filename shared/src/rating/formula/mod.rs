//! FORMULA rates: a small, safe expression language that computes a usage charge from the
//! event's amount and attributes with exact decimals.
//!
//! A formula is data, never code: it is lexed ([`lex`]), parsed into a tree ([`parse`]),
//! type-checked ([`check`]) when the rule is stored, and evaluated ([`eval`]) per event by
//! walking that tree once. There are no loops, no user functions, no I/O, and only the names
//! and functions listed below.
//!
//! # Grammar
//!
//! ```text
//! formula    := or                                   (must give a number)
//! or         := and ("or" and)*
//! and        := not ("and" not)*
//! not        := "not" not | comparison
//! comparison := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)?    (does not chain)
//! sum        := product (("+" | "-") product)*
//! product    := unary (("*" | "/") unary)*
//! unary      := "-" unary | primary
//! primary    := number | text | "true" | "false" | name
//!             | function "(" formula ("," formula)* ")" | "(" formula ")"
//! number     := digits ["." digits]              exact decimal, no exponent
//! text       := "'" characters "'"               '' inside is one quote
//! ```
//!
//! Keywords, names and functions are ASCII case-insensitive; blanks separate tokens.
//!
//! Names: `amount` (the event's amount converted into the rule's unit, a number),
//! `usage_amount` (the amount as submitted, in the event's unit), and the texts
//! `reference_id`, `sequence_id` (`''` when the event has none), `service_resource_identifier`
//! and `usage_uom`.
//!
//! Functions: `min(n, n, ...)`, `max(n, n, ...)` (two or more numbers), `abs(n)`, `floor(n)`,
//! `ceil(n)`, `round(n)` / `round(n, places)` (half away from zero; `places` a whole number
//! literal 0..=28), `if(condition, a, b)` (`a` and `b` of one type; only the branch taken is
//! evaluated), `starts_with(text, prefix)`.
//!
//! Types are checked before a rule is stored: arithmetic and ordering take numbers, `==` and
//! `!=` take two values of one type, `and`/`or`/`not` take conditions, and the whole formula
//! gives a number, which is the charge before currency rounding.
//!
//! # Bounds and failures
//!
//! - At most [`MAX_CHARS`] characters and [`MAX_DEPTH`] levels of nesting (parentheses,
//!   function calls, unary `-` and `not`), so parsing, checking and evaluation recurse to a
//!   bounded depth and run in time linear in the formula's length.
//! - Every error names a 1-based character position. Syntax, names, arity and types fail when
//!   the rule is stored. Evaluation fails only on arithmetic: division by zero and overflow of
//!   the decimal range (checked arithmetic throughout; nothing panics); rating reports that
//!   as the event's error.

mod check;
mod eval;
mod lex;
mod parse;
#[cfg(test)]
mod tests;

use super::condition::Attributes;
use rust_decimal::Decimal;
use std::fmt;

/// Longest formula, in characters.
pub const MAX_CHARS: usize = 1000;
/// Deepest nesting of parentheses, calls, unary minus and `not`.
pub const MAX_DEPTH: usize = 32;

/// What went wrong where: `position` is the 1-based character the problem was found at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormulaError {
    /// 1-based character position.
    pub position: usize,
    /// What is wrong.
    pub message: String,
}

impl FormulaError {
    fn new(position: usize, message: impl Into<String>) -> FormulaError {
        FormulaError {
            position,
            message: message.into(),
        }
    }
}

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at character {}", self.message, self.position)
    }
}

/// What a formula may read of one event.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The event's amount in the rule's unit (`amount`).
    pub amount: Decimal,
    /// The event's amount as submitted (`usage_amount`).
    pub usage_amount: Decimal,
    /// The event's attributes.
    pub attributes: Attributes<'a>,
}

/// A parsed, type-checked formula.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    root: parse::Node,
    nodes: usize,
}

impl Formula {
    /// Lexes, parses and type-checks `source`; the error names the position of the problem.
    pub fn parse(source: &str) -> Result<Formula, FormulaError> {
        let chars = source.chars().count();
        if chars > MAX_CHARS {
            return Err(FormulaError::new(
                MAX_CHARS + 1,
                format!("the formula is longer than {MAX_CHARS} characters ({chars})"),
            ));
        }
        let tokens = lex::lex(source)?;
        let (root, nodes) = parse::parse(tokens)?;
        check::check_formula(&root)?;
        Ok(Formula { root, nodes })
    }

    /// The number of nodes of the parsed tree (at most the formula's length in characters).
    pub fn size(&self) -> usize {
        self.nodes
    }

    /// The charge for one event; fails only on division by zero or overflow.
    pub fn evaluate(&self, inputs: &Inputs<'_>) -> Result<Decimal, FormulaError> {
        self.evaluate_counting(inputs).0
    }

    /// [`Formula::evaluate`], also answering how many tree nodes were visited (at most the
    /// tree's size: each node is evaluated at most once).
    fn evaluate_counting(&self, inputs: &Inputs<'_>) -> (Result<Decimal, FormulaError>, usize) {
        eval::evaluate(&self.root, inputs)
    }
}
