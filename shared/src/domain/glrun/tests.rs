//! Unit tests of `glrun` (kept in their own file so the module stays readable).

use super::*;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn span(id: i64, start: &str, end: &str, open: bool) -> PeriodSpan {
    PeriodSpan {
        id,
        start: day(start),
        end: day(end),
        open,
    }
}

#[test]
fn closed_periods_move_postings_to_the_next_open_one() {
    let periods = [
        span(1, "2026-01-01", "2026-01-31", false),
        span(2, "2026-02-01", "2026-02-28", false),
        span(3, "2026-03-01", "2026-03-31", true),
        span(4, "2026-04-01", "2026-04-30", false),
    ];
    let (p, d) = posting_period(&periods, day("2026-01-15")).unwrap();
    assert_eq!((p.id, d), (3, day("2026-03-01")));
    let (p, d) = posting_period(&periods, day("2026-03-31")).unwrap();
    assert_eq!((p.id, d), (3, day("2026-03-31")));
    let err = posting_period(&periods, day("2026-04-02")).unwrap_err();
    assert!(err.contains("no later period is open"), "{err}");
    let err = posting_period(&periods, day("2025-12-31")).unwrap_err();
    assert!(err.contains("no accounting period covers"), "{err}");
}

#[test]
fn a_date_alone_runs_through_the_end_of_that_day() {
    let tz: Tz = "America/Chicago".parse().unwrap();
    assert_eq!(
        run_bound("2026-11-30", tz).unwrap(),
        "2026-12-01T06:00:00.000Z"
    );
    assert_eq!(
        run_bound("2026-11-30T10:00:00Z", tz).unwrap(),
        "2026-11-30T10:00:00.000Z"
    );
    assert!(run_bound("later", tz).is_err());
}

#[test]
fn a_charge_in_a_closed_period_posts_on_the_first_day_of_the_next_open_one() {
    use crate::domain::calendars::{create_year, set_period_open, NewYear};
    use crate::domain::collect::catalogue::{create_collector, NewCollector};
    use crate::domain::collect::{run_collectors, NewCollectorRun};
    use crate::domain::ledgers::{create_ledger, get_ledger, LedgerFields};
    use crate::testing::{account, category, invoice};
    let mut conn = crate::testing::db();
    let tx = conn.transaction().unwrap();
    let cat = category(&tx, 1);
    let a = account(&tx, 1, Some(cat));
    let ledger = LedgerFields {
        name: Some(Some("L".into())),
        billing_account_category_ids: Some(Some(vec![cat])),
        ..Default::default()
    };
    let l = create_ledger(&tx, &ledger).unwrap();
    let fy = NewYear {
        id: None,
        name: "FY26".into(),
        description: None,
        start_date: day("2026-01-01"),
        end_date: day("2026-12-31"),
        accounting_periods: Vec::new(),
    };
    let y = create_year(&tx, l, &fy, true).unwrap();
    let periods = get_ledger(&tx, l).unwrap().calendar.years[0]
        .accounting_periods
        .iter()
        .map(|p| p.id)
        .collect::<Vec<_>>();
    // January and February closed: a January charge moves to March.
    set_period_open(&tx, l, y, periods[0], false).unwrap();
    set_period_open(&tx, l, y, periods[1], false).unwrap();
    invoice(&tx, a, "JAN", "100", "2026-01-15");
    invoice(&tx, a, "APR", "40", "2026-04-10");
    let collector = NewCollector {
        id: None,
        name: "invoices".into(),
        friendly_name: "Invoices".into(),
        description: None,
        group: "AR".into(),
        category: "INVOICE".into(),
    };
    create_collector(&tx, &collector).unwrap();
    let window = NewCollectorRun {
        run_type: "MANUAL".into(),
        collector_operations: Vec::new(),
        data_fetch_from_date: Some("2026-01-01".into()),
        data_fetch_to_date: Some("2027-01-01".into()),
        overlap_fetch_time: 0,
    };
    run_collectors(&tx, &window, chrono_tz::UTC).unwrap();
    let run = NewGlRun {
        gl_run_mode_id: None,
        ledger_id: l,
        run_to_date: "2026-12-31".into(),
    };
    let run_id = run_ledger(&tx, &run).unwrap();
    let mut stmt = tx
        .prepare(
            "SELECT period_id, posting_date, amount FROM journal_entries
             WHERE gl_run_id = ?1 ORDER BY id",
        )
        .unwrap();
    let posted = stmt
        .query_map([run_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    assert_eq!(
        posted,
        [
            (periods[2], "2026-03-01".to_string(), "100".to_string()),
            (periods[3], "2026-04-10".to_string(), "40".to_string()),
        ]
    );
    let status: String = tx
        .query_row("SELECT status FROM gl_runs WHERE id = ?1", [run_id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(status, "COMPLETE");
}

#[test]
fn run_statuses_spell_their_listed_names_and_read_back() {
    let names: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(names, RUN_STATUSES);
    for &status in RunStatus::ALL {
        assert_eq!(
            RunStatus::parse_field("status", status.as_str()).unwrap(),
            status
        );
        let json = serde_json::to_value(status).unwrap();
        assert_eq!(json, status.as_str());
    }
    let e = RunStatus::parse_field("status", "DONE")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "status: 'DONE' is not one of NOT_STARTED, RUNNING, ERROR, COMPLETE"
    );
    let conn = crate::testing::db();
    let read: RunStatus = conn
        .query_row("SELECT ?1", [RunStatus::Running], |r| r.get(0))
        .unwrap();
    assert_eq!(read, RunStatus::Running);
    assert!(conn
        .query_row("SELECT 'DONE'", [], |r| r.get::<_, RunStatus>(0))
        .is_err());
}
