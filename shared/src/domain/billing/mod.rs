//! The billing lifecycle the tenant clock drives (docs/billing-lifecycle.md states
//! it for users): bill cycles and scheduled bill batches invoice what accounts used and
//! subscribe to ([`runs`], through the invoicing code `billOnDemand` shares, [`invoicing`]),
//! and invoices reaching their due date are paid automatically or leave the account in
//! COLLECTION until a payment leaves nothing overdue ([`dues`]).
//!
//! Invariants: every charge is billed once (usage events carry the invoice that billed them,
//! services when their one-time prices were billed, accounts up to when their recurring
//! prices were billed); everything runs inside the caller's transaction, so an advance of
//! the clock is all or nothing.
//!
//! Calendar: a bill cycle's day is a local date of the tenant's time zone; a cycle run
//! happens at local midnight that day and closes the period that started at local midnight
//! of the same day a month before.

pub mod dues;
pub mod invoicing;
pub mod runs;

use chrono::{DateTime, Datelike, Months, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// A due transition of the tenant clock: (stored instant, kind order, id). The bill runs
/// enqueue theirs ([`runs::enqueue`]) and the clock orders and runs them; it is declared
/// here, below the clock, so that the runs need nothing from the clock that calls them.
pub type Due = (String, u8, i64);
/// A transition that ran: (kind, id, detail); the clock records it.
pub type Ran = (&'static str, i64, String);
/// An invoice reaching its due date (id: the invoice).
pub const INVOICE_DUE: u8 = 1;
/// A bill cycle's run (id: the bill cycle).
pub const BILL_CYCLE_RUN: u8 = 2;
/// A bill batch's run on its invoice date (id: the bill batch).
pub const BILL_BATCH_RUN: u8 = 3;
/// A retry of a declined automatic payment (id: the invoice).
pub const AUTOPAY_RETRY: u8 = 4;

/// Local midnight of `date` in `tz` (the earlier instant when it occurs twice; `None` when
/// the zone skips it entirely, which no zone does at midnight on the dates we use).
pub fn local_midnight(date: NaiveDate, tz: Tz) -> Option<DateTime<Utc>> {
    tz.from_local_datetime(&date.and_hms_opt(0, 0, 0)?)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// The local date of instant `t` in `tz`.
pub fn local_date(t: DateTime<Utc>, tz: Tz) -> NaiveDate {
    t.with_timezone(&tz).date_naive()
}

/// The date of day `day` in the month of `date` (clamped to the month's last day).
pub fn day_in_month(date: NaiveDate, day: u32) -> Option<NaiveDate> {
    let first = date.with_day(1)?;
    let last = first.checked_add_months(Months::new(1))?.pred_opt()?.day();
    first.with_day(day.clamp(1, last))
}

/// The first date after `today` whose day of month is `day` (clamped per month).
pub fn next_cycle_day(today: NaiveDate, day: u32) -> Option<NaiveDate> {
    let this_month = day_in_month(today, day)?;
    if this_month > today {
        return Some(this_month);
    }
    day_in_month(today.with_day(1)?.checked_add_months(Months::new(1))?, day)
}

/// The last cycle day (day of month `day`) strictly before `date`.
pub fn previous_cycle_day(date: NaiveDate, day: u32) -> Option<NaiveDate> {
    let this_month = day_in_month(date, day)?;
    if this_month < date {
        return Some(this_month);
    }
    day_in_month(date.with_day(1)?.checked_sub_months(Months::new(1))?, day)
}

/// The local midnights of day `day` of each month in `(from, to]`.
pub fn cycle_days_between(
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    day: u32,
    tz: Tz,
) -> Vec<DateTime<Utc>> {
    let mut out = Vec::new();
    let Some(mut month) = local_date(from, tz).with_day(1) else {
        return out;
    };
    let last = local_date(to, tz);
    while month <= last {
        if let Some(at) = day_in_month(month, day).and_then(|d| local_midnight(d, tz)) {
            if at > from && at <= to {
                out.push(at);
            }
        }
        match month.checked_add_months(Months::new(1)) {
            Some(next) => month = next,
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn cycle_days_are_found_before_and_after_a_date_across_year_ends() {
        for (today, day, next, previous) in [
            ("2026-11-10", 15, "2026-11-15", "2026-10-15"),
            ("2026-11-15", 15, "2026-12-15", "2026-10-15"),
            ("2026-12-20", 15, "2027-01-15", "2026-12-15"),
            ("2026-01-01", 1, "2026-02-01", "2025-12-01"),
            ("2026-01-31", 31, "2026-02-28", "2025-12-31"),
        ] {
            assert_eq!(
                next_cycle_day(date(today), day),
                Some(date(next)),
                "{today}"
            );
            assert_eq!(
                previous_cycle_day(date(today), day),
                Some(date(previous)),
                "{today}"
            );
        }
    }

    #[test]
    fn a_quarter_holds_three_cycle_days_at_local_midnight() {
        let tz: Tz = "America/Chicago".parse().unwrap();
        let from = crate::time::from_storage("2026-11-20T12:00:00Z").unwrap();
        let to = crate::time::from_storage("2027-02-20T12:00:00Z").unwrap();
        let days: Vec<String> = cycle_days_between(from, to, 1, tz)
            .into_iter()
            .map(crate::time::to_storage)
            .collect();
        assert_eq!(
            days,
            [
                "2026-12-01T06:00:00.000Z",
                "2027-01-01T06:00:00.000Z",
                "2027-02-01T06:00:00.000Z"
            ]
        );
    }
}
