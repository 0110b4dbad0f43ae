//! The syntax tree of a filter expression. Every node keeps the 1-based character position
//! of the text it came from, so that compile errors can point at it.

/// A comparison operator that takes one quoted value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// Equal.
    Eq,
    /// Not equal (SQL semantics: a null field matches neither EQ nor NEQ).
    Neq,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Pattern match: `%` any run, `_` one character (text fields only).
    Like,
}

impl CmpOp {
    /// The operator keyword as written in the language.
    pub fn keyword(self) -> &'static str {
        match self {
            CmpOp::Eq => "EQ",
            CmpOp::Neq => "NEQ",
            CmpOp::Lt => "LT",
            CmpOp::Lte => "LTE",
            CmpOp::Gt => "GT",
            CmpOp::Gte => "GTE",
            CmpOp::Like => "LIKE",
        }
    }

    /// The operator for a keyword (any case).
    pub fn from_keyword(word: &str) -> Option<CmpOp> {
        Some(match word.to_ascii_uppercase().as_str() {
            "EQ" => CmpOp::Eq,
            "NEQ" => CmpOp::Neq,
            "LT" => CmpOp::Lt,
            "LTE" => CmpOp::Lte,
            "GT" => CmpOp::Gt,
            "GTE" => CmpOp::Gte,
            "LIKE" => CmpOp::Like,
            _ => return None,
        })
    }
}

/// A field name as written, with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The name, e.g. `status` or `agreement.id`.
    pub name: String,
    /// 1-based character position.
    pub pos: usize,
}

/// A quoted value (quotes removed, doubled quotes undone), with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The unquoted text.
    pub text: String,
    /// 1-based character position of the opening quote.
    pub pos: usize,
}

/// A filter expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Both sides hold.
    And(Box<Expr>, Box<Expr>),
    /// Either side holds.
    Or(Box<Expr>, Box<Expr>),
    /// The inner expression does not hold.
    Not(Box<Expr>),
    /// `<field> <op> '<value>'`.
    Compare {
        /// The field.
        field: Field,
        /// The operator.
        op: CmpOp,
        /// The value.
        value: Value,
    },
    /// `<field> IS NULL` (`negated`: `IS NOT NULL`).
    IsNull {
        /// The field.
        field: Field,
        /// True for IS NOT NULL.
        negated: bool,
    },
    /// `<field> IN ('<v1>', '<v2>', ...)`.
    In {
        /// The field.
        field: Field,
        /// The values (1 to 50).
        values: Vec<Value>,
    },
}

impl Expr {
    /// Conjunction of two expressions.
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }

    /// Whether the expression mentions the field `name` anywhere (in any spelling that
    /// resolves to it: `crate::query::compile::same_name`).
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) => a.mentions(name) || b.mentions(name),
            Expr::Not(e) => e.mentions(name),
            Expr::Compare { field, .. } | Expr::IsNull { field, .. } | Expr::In { field, .. } => {
                super::compile::same_name(&field.name, name)
            }
        }
    }
}
