//! A tenant's billing policy: the rules its bill runs follow where billing platforms differ
//! (recurring prices in advance or in arrears, proration, payment terms, how usage tiers
//! count, the default agreement period, whether collector and ledger runs finish at once or
//! with the clock, the autopay retry schedule). The owner of table `billing_policy`.
//!
//! Invariants:
//! - every member has a default, and the defaults are what the sandbox did before a tenant
//!   could choose: a tenant that never set its policy (no row) bills as it always did;
//! - every value is checked against its closed set or range here ([`PolicyChange::apply`]),
//!   before anything is written, with a 400 naming the member and the allowed values; the
//!   admin API and the fixture document's `policy` member share that one check, and
//!   `fixtures::sets` lists the same constants for a document;
//! - a change is partial: members it does not name keep their stored value.

use crate::{Error, Result};
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;

/// When a recurring price is billed (`recurring_timing`).
pub const RECURRING_TIMINGS: &[&str] = &["ARREARS", "ADVANCE"];
/// How a partial period of a recurring price is billed (`proration`).
pub const PRORATIONS: &[&str] = &["BY_DAY", "NONE"];
/// What a usage rule's tiers count (`usage_tiers`).
pub const USAGE_TIERS: &[&str] = &["PER_EVENT", "CUMULATIVE"];
/// How collector and ledger runs progress (`runs`).
pub const RUN_PROGRESS: &[&str] = &["AT_ONCE", "WITH_CLOCK"];
/// The payment term in days (net N), the tenant's default and an account's own.
pub const PAYMENT_TERM_DAYS: RangeInclusive<i64> = 0..=365;
/// The default agreement period in months.
pub const AGREEMENT_MONTHS: RangeInclusive<i64> = 1..=120;
/// One autopay retry, in days after the invoice's due date.
pub const RETRY_DAYS: RangeInclusive<i64> = 1..=365;
/// Most autopay retries.
pub const MAX_RETRIES: usize = 10;

/// When a recurring price is billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecurringTiming {
    /// For the period that ends at the run (the sandbox's behaviour before the policy).
    #[default]
    Arrears,
    /// For the period that starts at the run.
    Advance,
}

/// How a partial period of a recurring price is billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Proration {
    /// By the days of the period billed over the period's days.
    #[default]
    ByDay,
    /// Whole periods only.
    None,
}

/// What a usage rule's tiers count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UsageTiers {
    /// Each event's own quantity (the sandbox's behaviour before the policy).
    #[default]
    PerEvent,
    /// The quantity of the bill period so far.
    Cumulative,
}

/// How collector and ledger runs progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunProgress {
    /// COMPLETE (or ERROR) in the answer of the POST that starts them.
    #[default]
    AtOnce,
    /// NOT_STARTED, then RUNNING and COMPLETE or ERROR as the tenant's clock advances.
    WithClock,
}

/// A tenant's billing policy (`GET /sandbox/v1/tenants/{id}/policy`; docs/billing-lifecycle.md
/// says what each member does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BillingPolicy {
    /// ARREARS (default): a recurring price is billed for the period ending at the run;
    /// ADVANCE: for the period starting at it.
    #[schema(schema_with = recurring_timing)]
    pub recurring_timing: RecurringTiming,
    /// BY_DAY (default): a partial period is billed by its days; NONE: whole periods only.
    #[schema(schema_with = proration)]
    pub proration: Proration,
    /// Net days from an invoice's date to its due date, for accounts without their own
    /// (default 30; 0 to 365).
    #[schema(minimum = 0, maximum = 365)]
    pub payment_term_days: i64,
    /// PER_EVENT (default): tiers apply to each event's quantity; CUMULATIVE: to the bill
    /// period's quantity so far.
    #[schema(schema_with = usage_tiers)]
    pub usage_tiers: UsageTiers,
    /// The agreement period, in months, of an agreement that states none (default 12; 1 to
    /// 120).
    #[schema(minimum = 1, maximum = 120)]
    pub default_agreement_months: i64,
    /// AT_ONCE (default): collector and ledger runs finish in the POST that starts them;
    /// WITH_CLOCK: they progress as the tenant's clock advances.
    #[schema(schema_with = run_progress)]
    pub runs: RunProgress,
    /// Days after an unpaid invoice's due date on which a declined automatic payment is
    /// tried again, increasing (default none; at most 10, each 1 to 365).
    pub autopay_retry_days: Vec<i64>,
}

impl Default for BillingPolicy {
    fn default() -> Self {
        BillingPolicy {
            recurring_timing: RecurringTiming::Arrears,
            proration: Proration::ByDay,
            payment_term_days: 30,
            usage_tiers: UsageTiers::PerEvent,
            default_agreement_months: 12,
            runs: RunProgress::AtOnce,
            autopay_retry_days: Vec::new(),
        }
    }
}

fn recurring_timing() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(RECURRING_TIMINGS)
}
fn proration() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(PRORATIONS)
}
fn usage_tiers() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(USAGE_TIERS)
}
fn run_progress() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(RUN_PROGRESS)
}

/// A change of the policy: the members to set, each checked against its set (the body of
/// `PUT .../policy` and the fixture document's `policy` member). Absent members keep their
/// value. Enumerated members are read as text so that a refusal names the allowed values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyChange {
    /// ARREARS or ADVANCE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = recurring_timing)]
    pub recurring_timing: Option<String>,
    /// BY_DAY or NONE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = proration)]
    pub proration: Option<String>,
    /// 0 to 365.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 365)]
    pub payment_term_days: Option<i64>,
    /// PER_EVENT or CUMULATIVE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = usage_tiers)]
    pub usage_tiers: Option<String>,
    /// 1 to 120.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 120)]
    pub default_agreement_months: Option<i64>,
    /// AT_ONCE or WITH_CLOCK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = run_progress)]
    pub runs: Option<String>,
    /// Increasing days after the due date, each 1 to 365, at most 10 (`[]`: no retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autopay_retry_days: Option<Vec<i64>>,
}

/// `value` as the member of `E` it spells, after [`super::check_enum`] against `allowed`.
fn member<E: for<'de> Deserialize<'de>>(field: &str, value: &str, allowed: &[&str]) -> Result<E> {
    super::check_enum(field, value, allowed)?;
    serde_json::from_value(serde_json::Value::String(value.to_string())).map_err(|e| {
        Error::Internal(format!(
            "{field}: {value} is in its set but not a member: {e}"
        ))
    })
}

/// Checks that `value` of `field` is in `range`.
fn within(field: &str, value: i64, range: &RangeInclusive<i64>) -> Result<i64> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(Error::bad_request(format!(
            "{field}: {value} is not one of {} to {}",
            range.start(),
            range.end()
        )))
    }
}

/// Checks an account's own payment term (net days), naming `field`.
pub fn check_payment_term(field: &str, days: i64) -> Result<i64> {
    within(field, days, &PAYMENT_TERM_DAYS)
}

/// Checks an autopay retry schedule: at most [`MAX_RETRIES`] days, each in [`RETRY_DAYS`],
/// increasing.
fn check_retries(days: &[i64]) -> Result<()> {
    const FIELD: &str = "autopay_retry_days";
    if days.len() > MAX_RETRIES {
        return Err(Error::bad_request(format!(
            "{FIELD}: {} retries; at most {MAX_RETRIES}",
            days.len()
        )));
    }
    for (i, day) in days.iter().enumerate() {
        within(&format!("{FIELD}[{i}]"), *day, &RETRY_DAYS)?;
        if i > 0 && days[i - 1] >= *day {
            return Err(Error::bad_request(format!(
                "{FIELD}[{i}]: {day} is not after {}; retry days increase",
                days[i - 1]
            )));
        }
    }
    Ok(())
}

impl PolicyChange {
    /// `policy` with this change laid over it, every member checked (the first refusal
    /// names its member and the allowed values).
    pub fn apply(&self, policy: &BillingPolicy) -> Result<BillingPolicy> {
        let mut out = policy.clone();
        if let Some(v) = &self.recurring_timing {
            out.recurring_timing = member("recurring_timing", v, RECURRING_TIMINGS)?;
        }
        if let Some(v) = &self.proration {
            out.proration = member("proration", v, PRORATIONS)?;
        }
        if let Some(v) = self.payment_term_days {
            out.payment_term_days = within("payment_term_days", v, &PAYMENT_TERM_DAYS)?;
        }
        if let Some(v) = &self.usage_tiers {
            out.usage_tiers = member("usage_tiers", v, USAGE_TIERS)?;
        }
        if let Some(v) = self.default_agreement_months {
            out.default_agreement_months =
                within("default_agreement_months", v, &AGREEMENT_MONTHS)?;
        }
        if let Some(v) = &self.runs {
            out.runs = member("runs", v, RUN_PROGRESS)?;
        }
        if let Some(v) = &self.autopay_retry_days {
            check_retries(v)?;
            out.autopay_retry_days = v.clone();
        }
        Ok(out)
    }

    /// The change that sets every member of `policy` that differs from the default (what a
    /// fixture export writes; empty for the default policy).
    pub fn from_policy(policy: &BillingPolicy) -> PolicyChange {
        let d = BillingPolicy::default();
        PolicyChange {
            recurring_timing: (policy.recurring_timing != d.recurring_timing)
                .then(|| spelled(&policy.recurring_timing)),
            proration: (policy.proration != d.proration).then(|| spelled(&policy.proration)),
            payment_term_days: (policy.payment_term_days != d.payment_term_days)
                .then_some(policy.payment_term_days),
            usage_tiers: (policy.usage_tiers != d.usage_tiers)
                .then(|| spelled(&policy.usage_tiers)),
            default_agreement_months: (policy.default_agreement_months
                != d.default_agreement_months)
                .then_some(policy.default_agreement_months),
            runs: (policy.runs != d.runs).then(|| spelled(&policy.runs)),
            autopay_retry_days: (policy.autopay_retry_days != d.autopay_retry_days)
                .then(|| policy.autopay_retry_days.clone()),
        }
    }

    /// Whether the change sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == PolicyChange::default()
    }
}

/// An enumerated member as the wire spells it (its serde name).
fn spelled<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

/// The tenant's policy (the default when none was ever set).
pub fn get(conn: &Connection) -> Result<BillingPolicy> {
    let row = conn
        .prepare_cached(
            "SELECT recurring_timing, proration, payment_term_days, usage_tiers,
                    default_agreement_months, runs, autopay_retry_days
             FROM billing_policy WHERE id = 1",
        )?
        .query_row([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
            ))
        })
        .optional()?;
    let Some((timing, proration, term, tiers, months, runs, retries)) = row else {
        return Ok(BillingPolicy::default());
    };
    let stored = |what: &str, e: &dyn std::fmt::Display| {
        Error::Internal(format!("billing_policy.{what} as stored is not valid: {e}"))
    };
    let retries: Vec<i64> =
        serde_json::from_str(&retries).map_err(|e| stored("autopay_retry_days", &e))?;
    let change = PolicyChange {
        recurring_timing: Some(timing),
        proration: Some(proration),
        payment_term_days: Some(term),
        usage_tiers: Some(tiers),
        default_agreement_months: Some(months),
        runs: Some(runs),
        autopay_retry_days: Some(retries),
    };
    change
        .apply(&BillingPolicy::default())
        .map_err(|e| stored("row", &e))
}

/// Applies `change` to the tenant's policy and answers the policy now in force; a refusal
/// writes nothing. `now` is the tenant clock's reading (stored text), kept as `updated_at`.
pub fn set(tx: &Transaction<'_>, change: &PolicyChange, now: &str) -> Result<BillingPolicy> {
    let policy = change.apply(&get(tx)?)?;
    let retries = serde_json::to_string(&policy.autopay_retry_days)
        .map_err(|e| Error::Internal(format!("autopay_retry_days: {e}")))?;
    tx.execute(
        "INSERT OR REPLACE INTO billing_policy (id, recurring_timing, proration,
             payment_term_days, usage_tiers, default_agreement_months, runs, autopay_retry_days,
             updated_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            spelled(&policy.recurring_timing),
            spelled(&policy.proration),
            policy.payment_term_days,
            spelled(&policy.usage_tiers),
            policy.default_agreement_months,
            spelled(&policy.runs),
            retries,
            now,
        ],
    )?;
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_row_is_the_default_and_a_change_keeps_what_it_does_not_name() {
        let mut conn = crate::testing::db();
        assert_eq!(get(&conn).unwrap(), BillingPolicy::default());
        let tx = conn.transaction().unwrap();
        let change = PolicyChange {
            proration: Some("NONE".into()),
            autopay_retry_days: Some(vec![1, 3, 7]),
            ..PolicyChange::default()
        };
        let set_to = set(&tx, &change, "2030-01-01T00:00:00Z").unwrap();
        assert_eq!(set_to.proration, Proration::None);
        let term = PolicyChange {
            payment_term_days: Some(15),
            ..PolicyChange::default()
        };
        let now = set(&tx, &term, "2030-01-02T00:00:00Z").unwrap();
        assert_eq!(now.proration, Proration::None);
        assert_eq!(now.payment_term_days, 15);
        assert_eq!(now.autopay_retry_days, vec![1, 3, 7]);
        assert_eq!(get(&tx).unwrap(), now);
        let back = PolicyChange::from_policy(&now);
        assert_eq!(back.apply(&BillingPolicy::default()).unwrap(), now);
        assert!(PolicyChange::from_policy(&BillingPolicy::default()).is_empty());
    }

    #[test]
    fn a_value_outside_its_set_is_refused_naming_the_member_and_the_allowed_values() {
        let p = BillingPolicy::default();
        let bad = |c: PolicyChange| c.apply(&p).unwrap_err().to_string();
        let e = bad(PolicyChange {
            recurring_timing: Some("advance".into()),
            ..PolicyChange::default()
        });
        assert_eq!(
            e,
            "recurring_timing: 'advance' is not one of ARREARS, ADVANCE"
        );
        let e = bad(PolicyChange {
            payment_term_days: Some(366),
            ..PolicyChange::default()
        });
        assert_eq!(e, "payment_term_days: 366 is not one of 0 to 365");
        let e = bad(PolicyChange {
            default_agreement_months: Some(0),
            ..PolicyChange::default()
        });
        assert_eq!(e, "default_agreement_months: 0 is not one of 1 to 120");
        let e = bad(PolicyChange {
            autopay_retry_days: Some(vec![3, 3]),
            ..PolicyChange::default()
        });
        assert!(
            e.starts_with("autopay_retry_days[1]: 3 is not after 3"),
            "{e}"
        );
        let e = bad(PolicyChange {
            autopay_retry_days: Some((1..=11).collect()),
            ..PolicyChange::default()
        });
        assert!(e.starts_with("autopay_retry_days: 11 retries"), "{e}");
    }
}
