//! Stage 4: the charge of one event, by one walk over the checked tree. Each node is
//! evaluated at most once (`and`/`or` stop early and `if` takes one branch, so often fewer).
//! All arithmetic is checked: division by zero and overflow are errors naming the operator's
//! position. A type mismatch cannot happen after [`super::check`]; should one slip through,
//! it is an error too, never a panic.

use super::check::places_of;
use super::parse::{Arith, Cmp, Func, Kind, Node, Var};
use super::{FormulaError, Inputs};
use rust_decimal::{Decimal, RoundingStrategy};

/// A value during evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value<'a> {
    Num(Decimal),
    Text(&'a str),
    Bool(bool),
}

/// Evaluates `root` for `inputs`; also answers the number of nodes visited.
pub(super) fn evaluate(root: &Node, inputs: &Inputs<'_>) -> (Result<Decimal, FormulaError>, usize) {
    let mut e = Eval { inputs, steps: 0 };
    let result = e.eval(root).and_then(|v| num(v, root.pos));
    (result, e.steps)
}

struct Eval<'i, 'a> {
    inputs: &'i Inputs<'a>,
    steps: usize,
}

fn mismatch(pos: usize) -> FormulaError {
    FormulaError::new(
        pos,
        "a value of the wrong type (the formula was not checked)",
    )
}

fn num(v: Value<'_>, pos: usize) -> Result<Decimal, FormulaError> {
    match v {
        Value::Num(n) => Ok(n),
        _ => Err(mismatch(pos)),
    }
}

fn boolean(v: Value<'_>, pos: usize) -> Result<bool, FormulaError> {
    match v {
        Value::Bool(b) => Ok(b),
        _ => Err(mismatch(pos)),
    }
}

fn overflow(pos: usize) -> FormulaError {
    FormulaError::new(pos, "arithmetic overflow")
}

impl<'i, 'a> Eval<'i, 'a>
where
    'a: 'i,
{
    fn eval<'n>(&mut self, node: &'n Node) -> Result<Value<'n>, FormulaError>
    where
        'i: 'n,
    {
        self.steps += 1;
        let pos = node.pos;
        Ok(match &node.kind {
            Kind::Num(n) => Value::Num(*n),
            Kind::Text(t) => Value::Text(t),
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Var(v) => {
                let a = &self.inputs.attributes;
                match v {
                    Var::Amount => Value::Num(self.inputs.amount),
                    Var::UsageAmount => Value::Num(self.inputs.usage_amount),
                    Var::ReferenceId => Value::Text(a.reference_id.unwrap_or("")),
                    Var::SequenceId => Value::Text(a.sequence_id.unwrap_or("")),
                    Var::ServiceResourceIdentifier => Value::Text(a.service_resource_identifier),
                    Var::UsageUom => Value::Text(a.usage_uom),
                }
            }
            Kind::Neg(x) => Value::Num(-num(self.eval(x)?, x.pos)?),
            Kind::Not(x) => Value::Bool(!boolean(self.eval(x)?, x.pos)?),
            Kind::Arith(first, rest) => {
                let mut acc = num(self.eval(first)?, first.pos)?;
                for (op, op_pos, operand) in rest {
                    let right = num(self.eval(operand)?, operand.pos)?;
                    acc = arith(*op, acc, right, *op_pos)?;
                }
                Value::Num(acc)
            }
            Kind::Compare(l, op, op_pos, r) => {
                let (a, b) = (self.eval(l)?, self.eval(r)?);
                Value::Bool(compare(*op, a, b, *op_pos)?)
            }
            Kind::And(xs) => {
                for x in xs {
                    if !boolean(self.eval(x)?, x.pos)? {
                        return Ok(Value::Bool(false));
                    }
                }
                Value::Bool(true)
            }
            Kind::Or(xs) => {
                for x in xs {
                    if boolean(self.eval(x)?, x.pos)? {
                        return Ok(Value::Bool(true));
                    }
                }
                Value::Bool(false)
            }
            Kind::Call(func, args) => self.call(pos, *func, args)?,
        })
    }

    fn number<'n>(
        &mut self,
        args: &'n [Node],
        i: usize,
        pos: usize,
    ) -> Result<Decimal, FormulaError>
    where
        'i: 'n,
    {
        let node = args.get(i).ok_or_else(|| mismatch(pos))?;
        num(self.eval(node)?, node.pos)
    }

    fn call<'n>(
        &mut self,
        pos: usize,
        func: Func,
        args: &'n [Node],
    ) -> Result<Value<'n>, FormulaError>
    where
        'i: 'n,
    {
        Ok(match func {
            Func::Min | Func::Max => {
                let mut best = self.number(args, 0, pos)?;
                for i in 1..args.len() {
                    let n = self.number(args, i, pos)?;
                    best = if func == Func::Min {
                        best.min(n)
                    } else {
                        best.max(n)
                    };
                }
                Value::Num(best)
            }
            Func::Abs => Value::Num(self.number(args, 0, pos)?.abs()),
            Func::Floor => Value::Num(self.number(args, 0, pos)?.floor()),
            Func::Ceil => Value::Num(self.number(args, 0, pos)?.ceil()),
            Func::Round => {
                let x = self.number(args, 0, pos)?;
                let places = match args.get(1) {
                    Some(p) => places_of(p)?,
                    None => 0,
                };
                Value::Num(x.round_dp_with_strategy(places, RoundingStrategy::MidpointAwayFromZero))
            }
            Func::If => {
                let c = args.first().ok_or_else(|| mismatch(pos))?;
                let branch = if boolean(self.eval(c)?, c.pos)? { 1 } else { 2 };
                let chosen = args.get(branch).ok_or_else(|| mismatch(pos))?;
                self.eval(chosen)?
            }
            Func::StartsWith => {
                let (a, b) = match (args.first(), args.get(1)) {
                    (Some(a), Some(b)) => (self.eval(a)?, self.eval(b)?),
                    _ => return Err(mismatch(pos)),
                };
                match (a, b) {
                    (Value::Text(a), Value::Text(b)) => Value::Bool(a.starts_with(b)),
                    _ => return Err(mismatch(pos)),
                }
            }
        })
    }
}

fn arith(op: Arith, a: Decimal, b: Decimal, pos: usize) -> Result<Decimal, FormulaError> {
    match op {
        Arith::Add => a.checked_add(b).ok_or_else(|| overflow(pos)),
        Arith::Sub => a.checked_sub(b).ok_or_else(|| overflow(pos)),
        Arith::Mul => a.checked_mul(b).ok_or_else(|| overflow(pos)),
        Arith::Div if b.is_zero() => Err(FormulaError::new(pos, "division by zero")),
        Arith::Div => a.checked_div(b).ok_or_else(|| overflow(pos)),
    }
}

fn compare(op: Cmp, a: Value<'_>, b: Value<'_>, pos: usize) -> Result<bool, FormulaError> {
    let ordering = match (a, b) {
        (Value::Num(x), Value::Num(y)) => x.cmp(&y),
        (Value::Text(x), Value::Text(y)) if matches!(op, Cmp::Eq | Cmp::Ne) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) if matches!(op, Cmp::Eq | Cmp::Ne) => x.cmp(&y),
        _ => return Err(mismatch(pos)),
    };
    Ok(match op {
        Cmp::Lt => ordering.is_lt(),
        Cmp::Le => ordering.is_le(),
        Cmp::Gt => ordering.is_gt(),
        Cmp::Ge => ordering.is_ge(),
        Cmp::Eq => ordering.is_eq(),
        Cmp::Ne => ordering.is_ne(),
    })
}
