//! Surface B's query language and the paged-query engine every list can share. No HTTP
//! here: the web glue (a layer above) reads list requests off HTTP and renders the answers.
//!
//! The language (see `docs/billing.md` for the user-facing description):
//! `<field> <OP> '<value>'` with EQ, NEQ, LT, LTE, GT, GTE, LIKE, `IS [NOT] NULL` and
//! `IN ('a', 'b')`, combined with NOT (tightest), AND, OR (loosest) and parentheses;
//! keywords in any case; a quote inside a value is doubled (`'O''Brien'`).
//!
//! Stages, one module each: [`lex`] (tokens), [`parse`] (precedence climbing into [`ast`]),
//! [`compile`] (type-checks against a per-resource [`FieldSpec`] whitelist and emits SQL in
//! which every value is a bound parameter and every column comes from the whitelist) and
//! [`list`] (the engine: selection, sort, one page, the count; every surface's lists, Surface
//! B's from the language, Surface C's from typed filters declared as the same list sources'
//! named filters, Surface A's from its own) over [`page`].

pub mod ast;
pub mod compile;
pub mod lex;
pub mod list;
pub mod page;
pub mod parse;

pub use compile::{compile_filter, compile_sort, FieldKind, FieldSpec, SqlFragment};
pub use list::{Criteria, ListSource, PageQuery, Selection};
pub use page::{Page, Paged};
pub use parse::parse;

/// Longest filter expression accepted, in characters.
pub const MAX_FILTER_CHARS: usize = 4000;
/// Deepest nesting of parentheses and NOTs accepted.
pub const MAX_DEPTH: usize = 32;
/// Most values in one IN list.
pub const MAX_IN_VALUES: usize = 50;

/// A filter or sort that cannot be used, with the 1-based character position it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// What is wrong.
    pub message: String,
    /// Where (1-based character position), when it concerns one place.
    pub position: Option<usize>,
}

impl QueryError {
    /// An error at a position.
    pub fn at(position: usize, message: impl Into<String>) -> Self {
        QueryError {
            message: message.into(),
            position: Some(position),
        }
    }

    /// An error about the whole expression.
    pub fn new(message: impl Into<String>) -> Self {
        QueryError {
            message: message.into(),
            position: None,
        }
    }
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.position {
            Some(p) => write!(f, "{} (at position {p})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for QueryError {}

#[cfg(test)]
mod tests;
