//! Unit tests of `calendars` (kept in their own file so the module stays readable).

use super::*;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

#[test]
fn generated_years_end_one_or_two_years_after_their_start() {
    let one = generate_monthly_periods(day("2026-03-01"), day("2027-02-28")).unwrap();
    assert_eq!(one.len(), 12);
    assert_eq!(one[11].end_date, day("2027-02-28"));
    let two = generate_monthly_periods(day("2027-03-01"), day("2029-02-28")).unwrap();
    assert_eq!(two.len(), 24);
    assert_eq!(two[11].end_date, day("2028-02-29"), "leap February");
    assert!(generate_monthly_periods(day("2026-03-02"), day("2027-03-01")).is_err());
    assert!(generate_monthly_periods(day("2026-03-01"), day("2027-03-01")).is_err());
    assert!(generate_monthly_periods(day("2026-03-01"), day("2028-02-28")).is_err());
}

#[test]
fn calendar_dates_accept_a_date_or_a_date_time() {
    assert_eq!(parse_calendar_date("2026-01-31"), Some(day("2026-01-31")));
    assert_eq!(
        parse_calendar_date("2026-01-31T23:00:00-06:00"),
        Some(day("2026-01-31"))
    );
    assert_eq!(parse_calendar_date("31/01/2026"), None);
}

fn ledger(tx: &Transaction<'_>) -> i64 {
    let fields = crate::domain::ledgers::LedgerFields {
        name: Some(Some("L".into())),
        ..Default::default()
    };
    crate::domain::ledgers::create_ledger(tx, &fields).unwrap()
}

fn year(name: &str, start: &str, end: &str) -> NewYear {
    NewYear {
        id: None,
        name: name.into(),
        description: None,
        start_date: day(start),
        end_date: day(end),
        accounting_periods: Vec::new(),
    }
}

#[test]
fn generate_periods_stores_a_monthly_year_with_an_open_history_each() {
    let mut conn = crate::testing::db();
    let tx = conn.transaction().unwrap();
    let l = ledger(&tx);
    let y = create_year(&tx, l, &year("FY26", "2026-04-01", "2027-03-31"), true).unwrap();
    let stored = get_year(&tx, l, y).unwrap();
    assert!(stored.complete && stored.open);
    let periods = &stored.accounting_periods;
    assert_eq!(periods.len(), 12);
    assert_eq!(
        (periods[0].name.as_deref(), periods[0].start_date.as_str()),
        (Some("2026-04"), "2026-04-01")
    );
    assert_eq!(periods[11].end_date, "2027-03-31");
    let quarters: Vec<i64> = periods.iter().filter_map(|p| p.quarter).collect();
    assert_eq!(quarters, [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    let history: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM period_history h JOIN calendar_nodes n ON n.id = h.period_id
             WHERE n.parent_id = ?1 AND h.open = 1 AND h.end_date IS NULL",
            [y],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(history, 12);
    // A second year may not overlap the first; one that follows it may.
    let overlap = create_year(&tx, l, &year("X", "2027-03-01", "2028-02-29"), true);
    assert!(matches!(overlap, Err(Error::Conflict(_))), "{overlap:?}");
    let bad_start = create_year(&tx, l, &year("Y", "2027-04-02", "2028-04-01"), true);
    assert!(
        matches!(bad_start, Err(Error::BadRequest(_))),
        "{bad_start:?}"
    );
    create_year(&tx, l, &year("FY27", "2027-04-01", "2028-03-31"), true).unwrap();
}

#[test]
fn closing_a_period_appends_to_its_history() {
    let mut conn = crate::testing::db();
    let tx = conn.transaction().unwrap();
    let l = ledger(&tx);
    let y = create_year(&tx, l, &year("FY26", "2026-01-01", "2026-12-31"), true).unwrap();
    let jan = get_year(&tx, l, y).unwrap().accounting_periods[0].id;
    set_period_open(&tx, l, y, jan, false).unwrap();
    let page = Page {
        number: 1,
        size: 25,
    };
    let history = period_history(&tx, l, y, jan, page, chrono_tz::UTC).unwrap();
    let states: Vec<(bool, bool)> = history
        .items
        .iter()
        .map(|h| (h.open, h.end_date.is_some()))
        .collect();
    assert_eq!(states, [(true, true), (false, false)]);
    assert!(!get_year(&tx, l, y).unwrap().accounting_periods[0].open);
}
