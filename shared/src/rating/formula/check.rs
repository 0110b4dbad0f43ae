//! Stage 3: types and arities, checked once when the rule is stored, so that evaluation can
//! only fail on arithmetic. One visit per node.

use super::parse::{Arith, Cmp, Func, Kind, Node, Var};
use super::FormulaError;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// A value's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Number,
    Text,
    Condition,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Number => "a number",
            Ty::Text => "a text",
            Ty::Condition => "a condition (true/false)",
        }
    }
}

/// Most decimal places `round` accepts (the scale limit of an exact decimal).
pub(super) const MAX_PLACES: u32 = 28;

/// Checks a whole formula: well typed, and giving a number.
pub(super) fn check_formula(root: &Node) -> Result<(), FormulaError> {
    match check(root)? {
        Ty::Number => Ok(()),
        other => Err(FormulaError::new(
            root.pos,
            format!(
                "the formula must give a number (the charge), not {}",
                other.name()
            ),
        )),
    }
}

fn want(node: &Node, ty: Ty, context: &str) -> Result<(), FormulaError> {
    let got = check(node)?;
    if got == ty {
        Ok(())
    } else {
        Err(FormulaError::new(
            node.pos,
            format!("{context} takes {}, found {}", ty.name(), got.name()),
        ))
    }
}

fn arith_name(op: Arith) -> &'static str {
    match op {
        Arith::Add => "'+'",
        Arith::Sub => "'-'",
        Arith::Mul => "'*'",
        Arith::Div => "'/'",
    }
}

/// The type of `node`, checking everything below it.
pub(super) fn check(node: &Node) -> Result<Ty, FormulaError> {
    match &node.kind {
        Kind::Num(_) => Ok(Ty::Number),
        Kind::Text(_) => Ok(Ty::Text),
        Kind::Bool(_) => Ok(Ty::Condition),
        Kind::Var(Var::Amount | Var::UsageAmount) => Ok(Ty::Number),
        Kind::Var(_) => Ok(Ty::Text),
        Kind::Neg(x) => want(x, Ty::Number, "'-'").map(|()| Ty::Number),
        Kind::Not(x) => want(x, Ty::Condition, "'not'").map(|()| Ty::Condition),
        Kind::Arith(first, rest) => {
            let mut left = check(first)?;
            for (op, pos, operand) in rest {
                let right = check(operand)?;
                if left != Ty::Number || right != Ty::Number {
                    return Err(FormulaError::new(
                        *pos,
                        format!(
                            "{} takes numbers, found {} and {}",
                            arith_name(*op),
                            left.name(),
                            right.name()
                        ),
                    ));
                }
                left = Ty::Number;
            }
            Ok(Ty::Number)
        }
        Kind::Compare(l, op, pos, r) => {
            let (lt, rt) = (check(l)?, check(r)?);
            let ordering = !matches!(op, Cmp::Eq | Cmp::Ne);
            if lt != rt || (ordering && lt != Ty::Number) {
                let what = if ordering {
                    "ordering compares numbers"
                } else {
                    "'==' and '!=' compare two values of one type"
                };
                return Err(FormulaError::new(
                    *pos,
                    format!("{what}, found {} and {}", lt.name(), rt.name()),
                ));
            }
            Ok(Ty::Condition)
        }
        Kind::And(xs) | Kind::Or(xs) => {
            let word = if matches!(node.kind, Kind::And(_)) {
                "'and'"
            } else {
                "'or'"
            };
            for x in xs {
                want(x, Ty::Condition, word)?;
            }
            Ok(Ty::Condition)
        }
        Kind::Call(func, args) => call(node.pos, *func, args),
    }
}

fn arity(
    pos: usize,
    name: &str,
    args: &[Node],
    min: usize,
    max: usize,
) -> Result<(), FormulaError> {
    if (min..=max).contains(&args.len()) {
        return Ok(());
    }
    let expected = match (min, max) {
        (a, b) if a == b => format!("{a}"),
        (a, usize::MAX) => format!("{a} or more"),
        (a, b) => format!("{a} to {b}"),
    };
    Err(FormulaError::new(
        pos,
        format!("{name} takes {expected} arguments, found {}", args.len()),
    ))
}

fn call(pos: usize, func: Func, args: &[Node]) -> Result<Ty, FormulaError> {
    match func {
        Func::Min | Func::Max => {
            let name = if func == Func::Min { "min" } else { "max" };
            arity(pos, name, args, 2, usize::MAX)?;
            for a in args {
                want(a, Ty::Number, name)?;
            }
            Ok(Ty::Number)
        }
        Func::Abs | Func::Floor | Func::Ceil => {
            let name = match func {
                Func::Abs => "abs",
                Func::Floor => "floor",
                _ => "ceil",
            };
            arity(pos, name, args, 1, 1)?;
            args.iter()
                .try_for_each(|a| want(a, Ty::Number, name))
                .map(|()| Ty::Number)
        }
        Func::Round => {
            arity(pos, "round", args, 1, 2)?;
            let mut args = args.iter();
            if let Some(x) = args.next() {
                want(x, Ty::Number, "round")?;
            }
            if let Some(places) = args.next() {
                places_of(places)?;
            }
            Ok(Ty::Number)
        }
        Func::If => {
            arity(pos, "if", args, 3, 3)?;
            let [c, a, b] = args else {
                return Err(FormulaError::new(pos, "if takes 3 arguments"));
            };
            want(c, Ty::Condition, "the first argument of if")?;
            let ta = check(a)?;
            want(b, ta, "if, after its second argument,")?;
            Ok(ta)
        }
        Func::StartsWith => {
            arity(pos, "starts_with", args, 2, 2)?;
            for a in args {
                want(a, Ty::Text, "starts_with")?;
            }
            Ok(Ty::Condition)
        }
    }
}

/// The decimal places of `round(x, places)`: a whole number literal 0..=[`MAX_PLACES`].
pub(super) fn places_of(node: &Node) -> Result<u32, FormulaError> {
    let bad = || {
        FormulaError::new(
            node.pos,
            format!("the places of round must be a whole number from 0 to {MAX_PLACES}"),
        )
    };
    let Kind::Num(n) = &node.kind else {
        return Err(bad());
    };
    if n.fract() != Decimal::ZERO || *n > Decimal::from(MAX_PLACES) {
        return Err(bad());
    }
    n.to_u32().filter(|p| *p <= MAX_PLACES).ok_or_else(bad)
}
