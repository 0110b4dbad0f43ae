//! Reading a tenant's test clock: real time, a frozen instant, or real time shifted by an
//! offset (a running clock that was advanced). The clock is kept in the tenant's own database
//! (table `sandbox_clock`, at most one row; no row is real time), so it replicates with the
//! tenant: every environment on one bucket reads the same clock at its next request.
//!
//! This is the reading half, below the domain: every time the tenant's data depends on reads
//! it through [`now_for`] on the connection or transaction of the call (never a global).
//! Setting and advancing the clock is a sandbox power (`sandbox::clock`), which stores a
//! [`Clock`] and runs the domain's transitions on the way.

use crate::{Error, Result};
use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension};

/// Earliest instant a clock may show (2000-01-01T00:00:00Z).
pub const MIN_YEAR: i32 = 2000;
/// A clock may show instants before the start of this year (2100-01-01T00:00:00Z).
pub const MAX_YEAR: i32 = 2100;

/// The first instant a clock may show and the first it may not (`[start of MIN_YEAR, start
/// of MAX_YEAR)`).
pub fn bounds() -> (DateTime<Utc>, DateTime<Utc>) {
    let at = |year| {
        Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    };
    (at(MIN_YEAR), at(MAX_YEAR))
}

/// A tenant's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Real time.
    Real,
    /// Stands still at this instant.
    Frozen(DateTime<Utc>),
    /// Runs with real time, shifted forward by this many milliseconds.
    Offset(i64),
}

impl Clock {
    /// The tenant's clock as stored (real when no row).
    pub fn load(conn: &Connection) -> Result<Clock> {
        let row = conn
            .prepare_cached("SELECT frozen_at, offset_ms FROM sandbox_clock WHERE id = 1")?
            .query_row([], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()?;
        Ok(match row {
            None => Clock::Real,
            Some((Some(frozen), _)) => {
                Clock::Frozen(super::from_storage(&frozen).ok_or_else(|| {
                    Error::Internal(format!(
                        "sandbox_clock.frozen_at {frozen:?} is not an instant"
                    ))
                })?)
            }
            Some((None, 0)) => Clock::Real,
            Some((None, ms)) => Clock::Offset(ms),
        })
    }

    /// What the clock reads now.
    pub fn now(&self) -> DateTime<Utc> {
        self.at(super::now())
    }

    /// What the clock reads when real time is `real`. A running clock set near the end of
    /// the bounds runs into it as real time passes: its reading stops at the last millisecond
    /// before [`MAX_YEAR`] (and never reads before [`MIN_YEAR`]), so nothing is stamped
    /// outside the bounds a setting is checked against.
    pub fn at(&self, real: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Clock::Real => real,
            Clock::Frozen(t) => *t,
            Clock::Offset(ms) => {
                let (min, end) = bounds();
                let last = end - chrono::Duration::milliseconds(1);
                real.checked_add_signed(chrono::Duration::milliseconds(*ms))
                    .unwrap_or(last)
                    .clamp(min, last)
            }
        }
    }
}

/// The current time of the tenant whose database `conn` is: what every tenant-data time
/// reads (see the module doc).
pub fn now_for(conn: &Connection) -> Result<DateTime<Utc>> {
    Ok(Clock::load(conn)?.now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_clock_stops_at_the_end_of_its_bounds() {
        let (_, end) = bounds();
        let real = Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap();
        // Set to read one second before the bound, then two seconds of real time pass.
        let clock = Clock::Offset((end - real).num_milliseconds() - 1000);
        assert_eq!(clock.at(real), end - chrono::Duration::seconds(1));
        let later = clock.at(real + chrono::Duration::seconds(2));
        assert_eq!(later, end - chrono::Duration::milliseconds(1));
        assert!(crate::time::to_storage(later).starts_with("2099-12-31T23:59:59"));
        // Far behind real time it never reads before the lower bound.
        assert_eq!(Clock::Offset(-200 * 365 * 86_400_000).at(real), bounds().0);
    }
}
