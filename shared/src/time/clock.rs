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
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension};

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

    /// What the clock reads when real time is `real`.
    pub fn at(&self, real: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Clock::Real => real,
            Clock::Frozen(t) => *t,
            Clock::Offset(ms) => real + chrono::Duration::milliseconds(*ms),
        }
    }
}

/// The current time of the tenant whose database `conn` is: what every tenant-data time
/// reads (see the module doc).
pub fn now_for(conn: &Connection) -> Result<DateTime<Utc>> {
    Ok(Clock::load(conn)?.now())
}
