//! The rating engine: pure functions from an event and a product's rate plan to a charge.
//! No storage here; `domain::usage` loads the plan and stores what comes out.
//!
//! A rate plan is an ordered list of [`Rule`]s. For an event, the rules are tried in order;
//! a rule is considered only when the event's unit converts into the rule's unit
//! ([`uom`]), and the first rule whose [`condition::Condition`] holds on the converted amount
//! prices it with its [`rate::Rate`] (FORMULA rates evaluate a [`formula::Formula`] over the
//! event). The charge is rounded per [`currency`].

pub mod condition;
pub mod currency;
pub mod formula;
pub mod rate;
pub mod uom;

use chrono::{DateTime, Utc};
pub use condition::{Attributes, Condition};
pub use rate::{LookupRow, Rate};
use rust_decimal::Decimal;

/// One rule of a rate plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The rule's id.
    pub id: i64,
    /// The rule's name (for messages).
    pub name: String,
    /// The charge category of its charges.
    pub charge_category_id: i64,
    /// When it applies.
    pub condition: Condition,
    /// How it prices; `Err` holds what is wrong with a stored definition, reported when the
    /// rule is reached.
    pub rate: Result<Rate, String>,
}

/// What is rated: the event's unit, amount, start and attributes.
#[derive(Debug, Clone, Copy)]
pub struct Usage<'a> {
    /// The event's unit.
    pub uom: &'a str,
    /// The event's amount.
    pub amount: Decimal,
    /// When the usage started.
    pub start: DateTime<Utc>,
    /// Attributes for attribute matches.
    pub attributes: Attributes<'a>,
}

/// The charge one rule produced for one event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Charge {
    /// The rule that matched.
    pub usage_rule_id: i64,
    /// Its charge category.
    pub charge_category_id: i64,
    /// The charge, rounded to the currency.
    pub charge: Decimal,
    /// The per-unit rate applied.
    pub rate: Decimal,
    /// The rule's unit.
    pub usage_uom: String,
    /// The event's amount in the rule's unit.
    pub usage_amount: Decimal,
}

/// Why an event could not be rated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RatingError {
    /// No rule of the plan rates in the event's unit family.
    UomNotConvertible(String),
    /// Rules of the family exist, but no condition holds.
    NoMatchingRule(String),
    /// The matching rule found no price (e.g. no lookup row valid at the event's start).
    RateNotFound(String),
    /// The matching rule's stored definition is invalid.
    RuleMisconfigured(String),
}

/// Checks a usage rule's definition the way rating will read it: the rate JSON of its kind
/// and the attribute match. Meant for rule creation, so that a bad rule is refused up front
/// rather than reported as `RULE_MISCONFIGURED` on the events it meets.
pub fn check_definition(
    kind: &str,
    rate_json: &str,
    uom: &str,
    attribute_match: Option<&str>,
) -> Result<(), String> {
    Rate::parse(kind, rate_json, uom)?;
    match attribute_match.map(str::trim) {
        None | Some("") => Ok(()),
        Some(text) => condition::AttributeMatch::parse(text).map(drop),
    }
}

/// Rates `usage` with the first matching rule of `plan`, rounding to `currency`.
pub fn rate(plan: &[Rule], usage: &Usage<'_>, currency: &str) -> Result<Charge, RatingError> {
    let mut same_family = false;
    for rule in plan {
        let Some(amount) = rule.condition.convert(usage.amount, usage.uom) else {
            continue;
        };
        same_family = true;
        if !rule.condition.holds(amount, usage.start, &usage.attributes) {
            continue;
        }
        let rate = rule.rate.as_ref().map_err(|e| {
            RatingError::RuleMisconfigured(format!("usage rule {} ({}): {e}", rule.id, rule.name))
        })?;
        let priced = rate.price(amount, usage).map_err(|e| {
            RatingError::RateNotFound(format!("usage rule {} ({}): {e}", rule.id, rule.name))
        })?;
        return Ok(Charge {
            usage_rule_id: rule.id,
            charge_category_id: rule.charge_category_id,
            charge: currency::round(priced.charge, currency),
            rate: priced.rate,
            usage_uom: rule.condition.uom.clone(),
            usage_amount: amount,
        });
    }
    if same_family {
        Err(RatingError::NoMatchingRule(format!(
            "no usage rule's condition holds for {} {}",
            crate::money::canonical(usage.amount),
            usage.uom
        )))
    } else {
        Err(RatingError::UomNotConvertible(format!(
            "no usage rule rates {} or a unit it converts into",
            usage.uom
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn rule(id: i64, uom: &str, min: Option<&str>, max: Option<&str>, rate: &str) -> Rule {
        Rule {
            id,
            name: format!("rule {id}"),
            charge_category_id: 9,
            condition: Condition {
                uom: uom.into(),
                min_amount: min.map(d),
                max_amount: max.map(d),
                valid_from: None,
                valid_to: None,
                attribute_match: None,
            },
            rate: Rate::parse("FLAT", rate, uom),
        }
    }

    fn usage(uom: &str, amount: &str) -> Usage<'static> {
        let uom: &'static str = Box::leak(uom.to_string().into_boxed_str());
        Usage {
            uom,
            amount: d(amount),
            start: crate::time::from_storage("2026-03-01T00:00:00Z").unwrap(),
            attributes: Attributes {
                reference_id: None,
                sequence_id: None,
                service_resource_identifier: "x",
                usage_uom: uom,
            },
        }
    }

    #[test]
    fn first_matching_rule_wins_with_conversion() {
        let plan = [
            rule(5, "COUNT", None, Some("1000"), r#"{"rate": 0.002}"#),
            rule(6, "COUNT", Some("1000"), None, r#"{"rate": 0.001}"#),
        ];
        let c = rate(&plan, &usage("COUNT", "999"), "USD").unwrap();
        assert_eq!((c.usage_rule_id, c.charge), (5, d("2.00")));
        let c = rate(&plan, &usage("COUNT", "1000"), "USD").unwrap();
        assert_eq!((c.usage_rule_id, c.charge), (6, d("1")));
        let hours = [rule(1, "HOUR", None, None, r#"{"rate": 0.12}"#)];
        let c = rate(&hours, &usage("MINUTE", "90"), "USD").unwrap();
        assert_eq!((c.usage_amount, c.charge), (d("1.5"), d("0.18")));
        let c = rate(&hours, &usage("SECOND", "1"), "USD").unwrap();
        assert_eq!(c.charge, d("0"));
    }

    #[test]
    fn definitions_are_checked() {
        assert!(check_definition("FLAT", r#"{"rate": 1}"#, "HOUR", None).is_ok());
        assert!(check_definition(
            "FLAT",
            r#"{"rate": 1}"#,
            "HOUR",
            Some("usage_uom EQ 'HOUR'")
        )
        .is_ok());
        assert!(check_definition("FLAT", r#"{"rate": 1}"#, "HOUR", Some("price GT '1'")).is_err());
        assert!(check_definition("TIERED", "{}", "HOUR", None).is_err());
    }

    #[test]
    fn failures_are_told_apart() {
        let plan = [rule(1, "COUNT", Some("10"), None, r#"{"rate": 1}"#)];
        assert!(matches!(
            rate(&plan, &usage("HOUR", "1"), "USD"),
            Err(RatingError::UomNotConvertible(_))
        ));
        assert!(matches!(
            rate(&plan, &usage("COUNT", "1"), "USD"),
            Err(RatingError::NoMatchingRule(_))
        ));
        let broken = [rule(2, "COUNT", None, None, "{}")];
        assert!(matches!(
            rate(&broken, &usage("COUNT", "1"), "USD"),
            Err(RatingError::RuleMisconfigured(_))
        ));
        assert!(matches!(
            rate(&[], &usage("COUNT", "1"), "USD"),
            Err(RatingError::UomNotConvertible(_))
        ));
    }
}
