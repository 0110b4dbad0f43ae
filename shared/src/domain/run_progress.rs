//! How collector and ledger runs progress: at once, or with the tenant clock (billing policy
//! `runs`, docs/revenue.md "Runs and the clock").
//!
//! - AT_ONCE (the default): a POSTed run is created, started and finished in the POST's one
//!   transaction; the answer shows it COMPLETE or ERROR.
//! - WITH_CLOCK: a POSTed run answers NOT_STARTED; the tenant clock starts it
//!   [`STARTS_AFTER_SECONDS`] after its creation (RUNNING, `date_started`) and finishes it
//!   [`RUNS_FOR_SECONDS`] after its start (COMPLETE or ERROR, `date_ended`). It collects or
//!   posts when it finishes, so its results (charge info, journal entries, run errors) appear
//!   with COMPLETE or ERROR and are computed from the data as it stands at that instant,
//!   within the window or bound fixed by the POST.
//!
//! The clock takes a step when it passes the step's instant: a clock advance takes the steps
//! in its interval in time order among the other transitions (`domain::transitions`), and a
//! clock that runs on its own (real time, or an offset) passes them without an advance, so
//! [`settle`] takes every step due by the clock's reading; Surface C calls it before it
//! answers with runs or their results and before it starts a run. A step is taken at its own
//! instant (the stamps it writes are that instant, not the moment it was noticed).
//!
//! Invariants: a run's steps happen in order, each once (a step re-reads the run's status and
//! `next_step_at` and does nothing when either has moved on: a run deleted, or a step already
//! taken by a concurrent settle); a run's schedule is fixed when it is created, so a policy
//! changed later does not change the runs under way.

use super::collect::{self, NewCollectorRun};
use super::glrun::{self, Ended, NewGlRun, RunStatus};
use super::policy::{self, RunProgress};
use crate::time::{from_storage, to_storage};
use crate::{Error, Result};
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use rusqlite::{Connection, Transaction};
use std::collections::BTreeSet;

/// Clock seconds from a run's creation to its start (RUNNING): the smallest advance a client
/// can make (`seconds: 1`) shows it RUNNING.
pub const STARTS_AFTER_SECONDS: i64 = 1;
/// Clock seconds from a run's start to its end (COMPLETE or ERROR): long enough that a client
/// advancing a second at a time reads RUNNING more than once.
pub const RUNS_FOR_SECONDS: i64 = 2;

/// Which kind of run a step belongs to. At one instant collector runs go first, so that a
/// ledger run ending with one posts what it collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunKind {
    /// A collector run (`/collector-runs`).
    Collector,
    /// A ledger run (`/glruns`).
    Ledger,
}

/// A run's next step, due at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Step {
    /// When it is due.
    pub at: DateTime<Utc>,
    /// The kind of run.
    pub kind: RunKind,
    /// The run's id.
    pub id: i64,
}

/// A step taken: the transition to record and the run's next step.
#[derive(Debug, Clone)]
pub struct Taken {
    /// One of `collector_run.started`, `collector_run.ended`, `gl_run.started`,
    /// `gl_run.ended` (`domain::transitions::TRANSITION_KINDS`).
    pub kind: &'static str,
    /// What happened, in words.
    pub detail: String,
    /// The run's next step (after a start: its end).
    pub next: Option<Step>,
}

fn seconds(n: i64) -> Duration {
    Duration::seconds(n)
}

/// Starts a collector run under the tenant's policy (module doc); answers its id. Steps the
/// clock has passed are taken first, so that a run which has ended by now does not hold the
/// next one back (409). The errors of [`collect::create_run`].
pub fn start_collector_run(tx: &Transaction<'_>, r: &NewCollectorRun, tz: Tz) -> Result<i64> {
    let now = settle(tx, tz)?;
    match policy::get(tx)?.runs {
        RunProgress::AtOnce => collect::run_collectors(tx, r, tz),
        RunProgress::WithClock => {
            let start = to_storage(now + seconds(STARTS_AFTER_SECONDS));
            collect::create_run(tx, r, tz, Some(&start))
        }
    }
}

/// Starts a ledger run under the tenant's policy (module doc); answers its id. Steps the
/// clock has passed are taken first, as for [`start_collector_run`]. The errors of
/// [`glrun::create_run`].
pub fn start_gl_run(tx: &Transaction<'_>, r: &NewGlRun, tz: Tz) -> Result<i64> {
    let now = settle(tx, tz)?;
    match policy::get(tx)?.runs {
        RunProgress::AtOnce => glrun::run_ledger(tx, r),
        RunProgress::WithClock => {
            let start = to_storage(now + seconds(STARTS_AFTER_SECONDS));
            glrun::create_run(tx, r, Some(&start))
        }
    }
}

/// The steps due at or before `to`, earliest first (ties: collector runs first, then by id).
/// A step due before the interval an advance covers is one a running clock passed on its own:
/// it is due all the same.
pub fn due(conn: &Connection, to: DateTime<Utc>) -> Result<Vec<Step>> {
    let to_s = to_storage(to);
    let mut steps = Vec::new();
    for (kind, table) in [
        (RunKind::Collector, "collector_runs"),
        (RunKind::Ledger, "gl_runs"),
    ] {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT next_step_at, id FROM {table}
             WHERE next_step_at IS NOT NULL AND next_step_at <= ?1"
        ))?;
        for row in stmt.query_map([&to_s], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
            let (at, id) = row?;
            steps.push(Step {
                at: instant(&at)?,
                kind,
                id,
            });
        }
    }
    steps.sort();
    Ok(steps)
}

/// Whether a step is due by the clock's reading now (what a surface asks before it decides
/// to write: with nothing due, [`settle`] would write nothing).
pub fn unsettled(conn: &Connection) -> Result<bool> {
    let now = crate::time::now_for(conn)?;
    Ok(!due(conn, now)?.is_empty())
}

/// Takes every step due by the clock's reading, in order (module doc), and answers that
/// reading.
pub fn settle(tx: &Transaction<'_>, tz: Tz) -> Result<DateTime<Utc>> {
    let now = crate::time::now_for(tx)?;
    let mut queue: BTreeSet<Step> = due(tx, now)?.into_iter().collect();
    while let Some(step) = queue.pop_first() {
        if let Some(next) = take(tx, step, tz)?.and_then(|t| t.next) {
            if next.at <= now {
                queue.insert(next);
            }
        }
    }
    Ok(now)
}

/// Takes `step`: starts a NOT_STARTED run or finishes a RUNNING one at the step's instant.
/// None when the run is gone or its next step is no longer this one.
pub fn take(tx: &Transaction<'_>, step: Step, tz: Tz) -> Result<Option<Taken>> {
    let at = to_storage(step.at);
    let state = match step.kind {
        RunKind::Collector => collect::run_step(tx, step.id)?,
        RunKind::Ledger => glrun::run_step(tx, step.id)?,
    };
    let Some((status, Some(next_at))) = state else {
        return Ok(None);
    };
    if from_storage(&next_at) != Some(step.at) {
        return Ok(None);
    }
    let (what, kind_started, kind_ended) = match step.kind {
        RunKind::Collector => (
            "collector run",
            "collector_run.started",
            "collector_run.ended",
        ),
        RunKind::Ledger => ("ledger run", "gl_run.started", "gl_run.ended"),
    };
    match status {
        RunStatus::NotStarted => {
            let end = step.at + seconds(RUNS_FOR_SECONDS);
            let end_s = to_storage(end);
            let started = match step.kind {
                RunKind::Collector => collect::start_run(tx, step.id, &at, Some(&end_s))?,
                RunKind::Ledger => glrun::start_run(tx, step.id, &at, Some(&end_s))?,
            };
            Ok(started.then(|| Taken {
                kind: kind_started,
                detail: format!(
                    "{what} {} RUNNING; it ends at {}",
                    step.id,
                    crate::time::render(&end_s, tz)
                ),
                next: Some(Step { at: end, ..step }),
            }))
        }
        RunStatus::Running => {
            let ended = match step.kind {
                RunKind::Collector => collect::finish_run(tx, step.id, &at, tz)?,
                RunKind::Ledger => glrun::finish_run(tx, step.id, &at)?,
            };
            Ok(ended.map(|e| Taken {
                kind: kind_ended,
                detail: ended_detail(what, step, e),
                next: None,
            }))
        }
        RunStatus::Complete | RunStatus::Error => Ok(None),
    }
}

fn ended_detail(what: &str, step: Step, e: Ended) -> String {
    let made = match step.kind {
        RunKind::Collector => "charge info records collected",
        RunKind::Ledger => "journal entries posted",
    };
    format!(
        "{what} {} {}: {} {made}, {} run errors",
        step.id, e.status, e.made, e.errors
    )
}

fn instant(at: &str) -> Result<DateTime<Utc>> {
    from_storage(at).ok_or_else(|| Error::Internal(format!("run step at {at:?} is no instant")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::test_clock::Clock;

    #[test]
    fn a_run_takes_each_step_once_in_order_at_its_instant() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let t = from_storage("2030-01-01T00:00:00Z").unwrap();
        Clock::Frozen(t).store(&tx).unwrap();
        let change = policy::PolicyChange {
            runs: Some("WITH_CLOCK".into()),
            ..policy::PolicyChange::default()
        };
        policy::set(&tx, &change, "2030-01-01T00:00:00Z").unwrap();
        let run = NewCollectorRun {
            run_type: "AUTO".into(),
            collector_operations: vec!["INSERT_INVOICES".into()],
            data_fetch_from_date: None,
            data_fetch_to_date: None,
            overlap_fetch_time: 0,
        };
        let id = start_collector_run(&tx, &run, chrono_tz::UTC).unwrap();
        assert_eq!(
            collect::run_step(&tx, id).unwrap(),
            Some((
                RunStatus::NotStarted,
                Some("2030-01-01T00:00:01.000Z".into())
            ))
        );
        assert!(due(&tx, t).unwrap().is_empty());
        let start = due(&tx, t + seconds(10)).unwrap();
        assert_eq!(start.len(), 1);
        let taken = take(&tx, start[0], chrono_tz::UTC).unwrap().unwrap();
        assert_eq!(taken.kind, "collector_run.started");
        let end = taken.next.unwrap();
        assert_eq!(end.at, t + seconds(STARTS_AFTER_SECONDS + RUNS_FOR_SECONDS));
        // The same step again, or a step at another instant, does nothing.
        assert!(take(&tx, start[0], chrono_tz::UTC).unwrap().is_none());
        let early = Step {
            at: end.at - seconds(1),
            ..end
        };
        assert!(take(&tx, early, chrono_tz::UTC).unwrap().is_none());
        let taken = take(&tx, end, chrono_tz::UTC).unwrap().unwrap();
        assert_eq!(taken.kind, "collector_run.ended");
        assert!(taken.next.is_none());
        assert_eq!(
            collect::run_step(&tx, id).unwrap(),
            Some((RunStatus::Complete, None))
        );
        assert!(due(&tx, t + seconds(100)).unwrap().is_empty());
    }
}
