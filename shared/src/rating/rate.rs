//! Rate kinds: how a rule turns an amount (already in the rule's unit) into a charge.
//!
//! Definitions are the JSON documented on `NewUsageRule` (domain::catalog):
//! - FLAT `{"rate": n}`: amount × rate.
//! - TIERED `{"tiers": [{"up_to": n | null, "rate": n}, ...]}`: graduated tiers; each slice of
//!   the amount is charged at the rate of the tier it falls in (the first 100 at the first rate,
//!   the next slice at the second...). `up_to` bounds must rise; only the last may be null.
//!   An amount beyond a bounded last tier is charged at the last tier's rate.
//! - TABLE `{"lookup_table_id": id, "key": "..."}`: amount × the value of the lookup table row
//!   with that key whose [valid_from, valid_to) holds the event's start; `key` defaults to the
//!   rule's unit.
//! - PASS_THROUGH `{}`: the amount itself is the charge (rate 1).
//! - FORMULA `{"expression": "..."}`: the value of the expression ([`super::formula`]) over
//!   the event; its rate is the charge ÷ the amount (12 decimals; 0 for a zero amount).

use super::formula::{Formula, Inputs};
use super::Usage;
use crate::money::deserialize_number;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;

/// One row of a lookup table, as the engine reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupRow {
    /// The key the row answers.
    pub key: String,
    /// The rate for the key.
    pub value: Decimal,
    /// Valid from (inclusive); open when absent.
    pub valid_from: Option<DateTime<Utc>>,
    /// Valid to (exclusive); open when absent.
    pub valid_to: Option<DateTime<Utc>>,
}

/// One graduated tier.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Upper bound of the tier (exclusive of the next tier), open when absent.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub up_to: Option<Decimal>,
    /// Rate per unit inside the tier.
    #[serde(deserialize_with = "deserialize_number")]
    pub rate: Decimal,
}

/// A parsed rate definition.
#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    /// Amount × rate.
    Flat {
        /// Rate per unit.
        rate: Decimal,
    },
    /// Graduated tiers.
    Tiered {
        /// The tiers, bounds rising.
        tiers: Vec<Tier>,
    },
    /// Amount × the lookup table value valid at the event's start.
    Table {
        /// The lookup table.
        lookup_table_id: i64,
        /// The key looked up.
        key: String,
        /// The table's rows (filled by the loader).
        rows: Vec<LookupRow>,
    },
    /// The amount is the charge.
    PassThrough,
    /// The value of a formula over the event.
    Formula {
        /// The parsed, checked expression.
        formula: Box<Formula>,
    },
}

/// Decimals of the rate shown for a FORMULA charge (charge ÷ amount).
const FORMULA_RATE_PLACES: u32 = 12;

/// The charge of a rate before currency rounding, and the rate that produced it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Priced {
    /// Unrounded charge.
    pub charge: Decimal,
    /// The per-unit rate applied (for TIERED: the rate of the tier the last unit fell in).
    pub rate: Decimal,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlatDef {
    #[serde(deserialize_with = "deserialize_number")]
    rate: Decimal,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TieredDef {
    tiers: Vec<Tier>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableDef {
    lookup_table_id: i64,
    key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PassThroughDef {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormulaDef {
    expression: String,
}

impl Rate {
    /// Parses a stored definition of `kind`; `rule_uom` is the default TABLE key. The error
    /// says what is wrong with the definition.
    pub fn parse(kind: &str, json: &str, rule_uom: &str) -> Result<Rate, String> {
        let bad = |e: serde_json::Error| format!("{kind} rate definition: {e}");
        match kind {
            "FLAT" => {
                let d: FlatDef = serde_json::from_str(json).map_err(bad)?;
                Ok(Rate::Flat { rate: d.rate })
            }
            "TIERED" => {
                let d: TieredDef = serde_json::from_str(json).map_err(bad)?;
                check_tiers(&d.tiers)?;
                Ok(Rate::Tiered { tiers: d.tiers })
            }
            "TABLE" => {
                let d: TableDef = serde_json::from_str(json).map_err(bad)?;
                Ok(Rate::Table {
                    lookup_table_id: d.lookup_table_id,
                    key: d.key.unwrap_or_else(|| rule_uom.to_string()),
                    rows: Vec::new(),
                })
            }
            "PASS_THROUGH" => {
                let _: PassThroughDef = serde_json::from_str(json).map_err(bad)?;
                Ok(Rate::PassThrough)
            }
            "FORMULA" => {
                let d: FormulaDef = serde_json::from_str(json).map_err(bad)?;
                let formula = Formula::parse(&d.expression)
                    .map_err(|e| format!("FORMULA expression: {e}"))?;
                Ok(Rate::Formula {
                    formula: Box::new(formula),
                })
            }
            other => Err(format!("unknown rate kind '{other}'")),
        }
    }

    /// Prices `amount` (the event's amount in the rule's unit) for `usage`. The error says
    /// why no price exists (no lookup row valid at the start, arithmetic overflow, a formula's
    /// division by zero).
    pub fn price(&self, amount: Decimal, usage: &Usage<'_>) -> Result<Priced, String> {
        let overflow = || "the charge overflows".to_string();
        let at = usage.start;
        match self {
            Rate::Flat { rate } => Ok(Priced {
                charge: amount.checked_mul(*rate).ok_or_else(overflow)?,
                rate: *rate,
            }),
            Rate::PassThrough => Ok(Priced {
                charge: amount,
                rate: Decimal::ONE,
            }),
            Rate::Tiered { tiers } => price_tiers(tiers, amount).ok_or_else(overflow),
            Rate::Formula { formula } => {
                let inputs = Inputs {
                    amount,
                    usage_amount: usage.amount,
                    attributes: usage.attributes,
                };
                let charge = formula
                    .evaluate(&inputs)
                    .map_err(|e| format!("FORMULA: {e}"))?;
                let rate = if amount.is_zero() {
                    Decimal::ZERO
                } else {
                    charge
                        .checked_div(amount)
                        .ok_or_else(|| "FORMULA: the rate (charge ÷ amount) overflows".to_string())?
                        .round_dp_with_strategy(
                            FORMULA_RATE_PLACES,
                            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                        )
                        .normalize()
                };
                Ok(Priced { charge, rate })
            }
            Rate::Table {
                lookup_table_id,
                key,
                rows,
            } => {
                let row = rows
                    .iter()
                    .find(|r| {
                        r.key == *key
                            && r.valid_from.is_none_or(|f| f <= at)
                            && r.valid_to.is_none_or(|t| at < t)
                    })
                    .ok_or_else(|| {
                        format!(
                            "lookup table {lookup_table_id} has no row for key '{key}' valid at {}",
                            crate::time::to_storage(at)
                        )
                    })?;
                Ok(Priced {
                    charge: amount.checked_mul(row.value).ok_or_else(overflow)?,
                    rate: row.value,
                })
            }
        }
    }
}

impl Rate {
    /// For a TIERED rate, the unrounded charge of `amount` taken as one quantity (what
    /// cumulative tiers price: a bill period's quantity of an account and rule); `None` for
    /// the other kinds, whose charge does not depend on what was used before. `Err` on
    /// overflow.
    pub fn tiered_charge(&self, amount: Decimal) -> Option<Result<Decimal, String>> {
        match self {
            Rate::Tiered { tiers } => Some(
                price_tiers(tiers, amount)
                    .map(|p| p.charge)
                    .ok_or_else(|| "the charge overflows".to_string()),
            ),
            _ => None,
        }
    }
}

fn check_tiers(tiers: &[Tier]) -> Result<(), String> {
    if tiers.is_empty() {
        return Err("TIERED rate definition: tiers must not be empty".into());
    }
    let mut previous = Decimal::ZERO;
    for (i, t) in tiers.iter().enumerate() {
        match t.up_to {
            Some(up_to) if up_to <= previous => {
                return Err(format!(
                    "TIERED rate definition: tier {} up_to {up_to} does not rise above {previous}",
                    i + 1
                ))
            }
            Some(up_to) => previous = up_to,
            None if i + 1 < tiers.len() => {
                return Err(format!(
                    "TIERED rate definition: only the last tier may be open (tier {})",
                    i + 1
                ))
            }
            None => {}
        }
    }
    Ok(())
}

/// Graduated pricing; `None` on overflow.
fn price_tiers(tiers: &[Tier], amount: Decimal) -> Option<Priced> {
    let mut charge = Decimal::ZERO;
    let mut floor = Decimal::ZERO;
    let mut rate = tiers.first()?.rate;
    for (i, t) in tiers.iter().enumerate() {
        if amount <= floor && i > 0 {
            break;
        }
        rate = t.rate;
        let last = i + 1 == tiers.len();
        let ceiling = match t.up_to {
            Some(up_to) if !last => up_to,
            _ => amount.max(floor),
        };
        let slice = amount.min(ceiling).checked_sub(floor)?.max(Decimal::ZERO);
        charge = charge.checked_add(slice.checked_mul(t.rate)?)?;
        floor = ceiling;
    }
    Some(Priced { charge, rate })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    /// An event starting at `s` (what a rate reads of it besides the amount).
    fn at(s: &str) -> Usage<'static> {
        Usage {
            uom: "HOUR",
            amount: d("1"),
            start: crate::time::from_storage(s).unwrap(),
            attributes: crate::rating::Attributes {
                reference_id: Some("roam-1"),
                sequence_id: None,
                service_resource_identifier: "x",
                usage_uom: "HOUR",
            },
        }
    }

    const TIERS: &str = r#"{"tiers": [{"up_to": 100, "rate": 0.09}, {"up_to": 1000, "rate": 0.07}, {"up_to": null, "rate": 0.05}]}"#;

    #[test]
    fn flat_and_pass_through() {
        let t = at("2026-01-01T00:00:00Z");
        let flat = Rate::parse("FLAT", r#"{"rate": 0.12}"#, "HOUR").unwrap();
        assert_eq!(flat.price(d("3.5"), &t).unwrap().charge, d("0.42"));
        let pass = Rate::parse("PASS_THROUGH", "{}", "CURRENCY").unwrap();
        assert_eq!(pass.price(d("19.999"), &t).unwrap().charge, d("19.999"));
    }

    #[test]
    fn tiers_are_graduated() {
        let t = at("2026-01-01T00:00:00Z");
        let r = Rate::parse("TIERED", TIERS, "GIGABYTE").unwrap();
        let p = |a: &str| r.price(d(a), &t).unwrap();
        assert_eq!(p("50").charge, d("4.5"));
        assert_eq!(p("100").charge, d("9"));
        assert_eq!(p("150").charge, d("12.5"));
        assert_eq!(p("150").rate, d("0.07"));
        // 100*0.09 + 900*0.07 + 500*0.05
        assert_eq!(p("1500").charge, d("97"));
        assert_eq!(p("1500").rate, d("0.05"));
        assert_eq!(p("0").charge, d("0"));
    }

    #[test]
    fn bounded_last_tier_extends() {
        let t = at("2026-01-01T00:00:00Z");
        let r = Rate::parse(
            "TIERED",
            r#"{"tiers": [{"up_to": 10, "rate": 2}, {"up_to": 20, "rate": 1}]}"#,
            "COUNT",
        )
        .unwrap();
        assert_eq!(r.price(d("30"), &t).unwrap().charge, d("40"));
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(Rate::parse("FLAT", "{}", "HOUR").is_err());
        assert!(Rate::parse("FLAT", r#"{"rate": "x"}"#, "HOUR").is_err());
        assert!(Rate::parse("TIERED", r#"{"tiers": []}"#, "HOUR").is_err());
        assert!(Rate::parse(
            "TIERED",
            r#"{"tiers": [{"up_to": null, "rate": 1}, {"up_to": 5, "rate": 1}]}"#,
            "HOUR"
        )
        .is_err());
        assert!(Rate::parse(
            "TIERED",
            r#"{"tiers": [{"up_to": 5, "rate": 1}, {"up_to": 5, "rate": 1}]}"#,
            "HOUR"
        )
        .is_err());
        assert!(Rate::parse("TABLE", "{}", "HOUR").is_err());
        assert!(Rate::parse("FORMULA", "{}", "HOUR").is_err());
        assert!(Rate::parse("FORMULA", r#"{"expression": "1", "x": 1}"#, "HOUR").is_err());
        let e = Rate::parse("FORMULA", r#"{"expression": "amount *"}"#, "HOUR").unwrap_err();
        assert_eq!(
            e,
            "FORMULA expression: expected a value, found the end at character 9"
        );
    }

    #[test]
    fn table_rows_by_validity() {
        let mut r =
            Rate::parse("TABLE", r#"{"lookup_table_id": 1}"#, "KILOWATTS_PER_HOUR").unwrap();
        if let Rate::Table { rows, .. } = &mut r {
            rows.push(LookupRow {
                key: "KILOWATTS_PER_HOUR".into(),
                value: d("0.21"),
                valid_from: Some(at("2025-01-01T00:00:00Z").start),
                valid_to: Some(at("2026-01-01T00:00:00Z").start),
            });
            rows.push(LookupRow {
                key: "KILOWATTS_PER_HOUR".into(),
                value: d("0.2375"),
                valid_from: Some(at("2026-01-01T00:00:00Z").start),
                valid_to: None,
            });
        }
        assert_eq!(
            r.price(d("10"), &at("2025-12-31T23:59:59Z")).unwrap().rate,
            d("0.21")
        );
        assert_eq!(
            r.price(d("10"), &at("2026-01-01T00:00:00Z"))
                .unwrap()
                .charge,
            d("2.375")
        );
        assert!(r.price(d("10"), &at("2024-06-01T00:00:00Z")).is_err());
    }

    #[test]
    fn formulas_price_over_the_event() {
        let t = at("2026-01-01T00:00:00Z");
        let r = Rate::parse(
            "FORMULA",
            r#"{"expression": "if(starts_with(reference_id, 'roam'), max(2.5, amount * 0.4), 0)"}"#,
            "MINUTE",
        )
        .unwrap();
        let p = r.price(d("7"), &t).unwrap();
        assert_eq!((p.charge, p.rate), (d("2.8"), d("0.4")));
        let p = r.price(d("3"), &t).unwrap();
        assert_eq!((p.charge, p.rate), (d("2.5"), d("0.833333333333")));
        assert_eq!(r.price(d("0"), &t).unwrap().rate, d("0"));
        let r = Rate::parse("FORMULA", r#"{"expression": "1 / (amount - 2)"}"#, "COUNT").unwrap();
        assert_eq!(
            r.price(d("2"), &t).unwrap_err(),
            "FORMULA: division by zero at character 3"
        );
    }
}
