//! The test clock of one tenant as a sandbox power: setting it (frozen, real) and advancing
//! it, which runs the domain's time-driven transitions on the way. The clock itself (real
//! time, a frozen instant, or real time shifted by an offset), its storage in the tenant's
//! database (table `sandbox_clock`, so it replicates with the tenant) and its reading
//! ([`crate::time::now_for`]) live below the domain, in [`crate::time::test_clock`]; this module
//! adds writing it and the admin API's view. A reset returns it to real time.
//!
//! Every time the tenant's data depends on reads the clock (stamps, run times, defaults such
//! as "today"). Credentials and token expiry stay on real time ([`crate::time::now`]).
//!
//! Invariants: the clock's reading stays within [`MIN_YEAR`, `MAX_YEAR`) (checked when set or
//! advanced, and held at read time by [`crate::time::test_clock::Clock::at`] for a running clock
//! that runs into the end); it only moves backwards through an explicit set
//! (`PUT .../clock`) or an undo (a restore of the tenant before an advance, see
//! [`super::undo`]), never through an advance.

pub use crate::time::test_clock::Clock;
use crate::{Error, Result};
use chrono::{DateTime, Utc};
use rusqlite::Transaction;
use serde::{Deserialize, Serialize};

/// The modes a clock shows (`ClockView::mode`) and a setting names.
pub const MODES: &[&str] = &["real", "frozen", "offset"];

fn modes() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(MODES)
}

fn nullable_modes() -> utoipa::openapi::Schema {
    crate::json_schema::nullable_enumeration(MODES)
}

pub use crate::time::test_clock::{MAX_YEAR, MIN_YEAR};
/// Longest single advance: ten years of 365 days, in seconds.
pub const MAX_ADVANCE_SECONDS: i64 = 10 * 365 * 24 * 3600;

/// How the admin API shows a clock.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = Clock)]
pub struct ClockView {
    /// `real`, `frozen` or `offset`.
    #[schema(schema_with = modes)]
    #[serde(deserialize_with = "crate::json_schema::static_word")]
    pub mode: crate::json_schema::Word,
    /// What the clock reads now (the tenant's offset).
    #[schema(format = DateTime)]
    pub now: String,
    /// The frozen instant (mode `frozen`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, format = DateTime)]
    pub frozen_at: Option<String>,
    /// Seconds ahead of real time (mode `offset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = f64)]
    pub offset_seconds: Option<f64>,
}

/// Writing a clock and showing it: the power's half (the type and its reading are in
/// [`crate::time::test_clock`]).
impl Clock {
    /// Stores this clock as the tenant's (real time removes the row).
    pub fn store(&self, tx: &Transaction<'_>) -> Result<()> {
        let stamp = crate::time::to_storage(crate::time::now());
        match self {
            Clock::Real => {
                tx.execute("DELETE FROM sandbox_clock", [])?;
            }
            Clock::Frozen(t) => {
                tx.execute(
                    "INSERT OR REPLACE INTO sandbox_clock (id, frozen_at, offset_ms, updated_at)
                     VALUES (1, ?1, 0, ?2)",
                    rusqlite::params![crate::time::to_storage(*t), stamp],
                )?;
            }
            Clock::Offset(ms) => {
                tx.execute(
                    "INSERT OR REPLACE INTO sandbox_clock (id, frozen_at, offset_ms, updated_at)
                     VALUES (1, NULL, ?1, ?2)",
                    rusqlite::params![ms, stamp],
                )?;
            }
        }
        Ok(())
    }

    /// The admin API's view, rendered in `tz`.
    pub fn view(&self, tz: chrono_tz::Tz) -> ClockView {
        let render = |t: DateTime<Utc>| crate::time::render(&crate::time::to_storage(t), tz);
        let (mode, frozen_at, offset_seconds) = match self {
            Clock::Real => ("real", None, None),
            Clock::Frozen(t) => ("frozen", Some(render(*t)), None),
            Clock::Offset(ms) => ("offset", None, Some(*ms as f64 / 1000.0)),
        };
        ClockView {
            mode,
            now: render(self.now()),
            frozen_at,
            offset_seconds,
        }
    }
}

/// Body of `PUT .../clock`, and the `clock` of a tenant's creation: `{"frozen_at":
/// "<date-time>"}`, `{"mode": "frozen"}` (freeze at the clock's current reading),
/// `{"offset_seconds": N}` (run N seconds ahead of real time; negative behind) or
/// `{"mode": "real"}`.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = SetClock)]
pub struct Setting {
    /// `real`, `frozen` or `offset` (implied by the other member when absent).
    #[schema(schema_with = nullable_modes)]
    pub mode: Option<String>,
    /// The instant to freeze at (a date-time, or a date: midnight in the tenant's zone).
    pub frozen_at: Option<String>,
    /// Seconds ahead of real time.
    pub offset_seconds: Option<i64>,
}

impl Setting {
    /// The clock this setting makes of `current` (the tenant's clock now), or a 400 naming
    /// the member at fault.
    pub fn clock(&self, current: Clock, tz: chrono_tz::Tz) -> Result<Clock> {
        let mode = self.mode.as_deref().map(str::to_ascii_lowercase);
        let clock = match (mode.as_deref(), &self.frozen_at, self.offset_seconds) {
            (Some("real"), None, None) => Clock::Real,
            (Some("frozen") | None, Some(text), None) => {
                let at = crate::time::parse_date_or_datetime(text, tz).ok_or_else(|| {
                    Error::bad_request(format!("frozen_at: {}", crate::time::not_a_date(text)))
                })?;
                check_bounds("frozen_at", at)?;
                Clock::Frozen(at)
            }
            (Some("frozen"), None, None) => Clock::Frozen(current.now()),
            (Some("offset") | None, None, Some(s)) => {
                let ms = s.checked_mul(1000).filter(|ms| ms.unsigned_abs() <= 200 * 365 * 86_400_000).ok_or_else(|| {
                    Error::bad_request("offset_seconds: the clock shows instants from 2000 to 2099")
                })?;
                let clock = if ms == 0 { Clock::Real } else { Clock::Offset(ms) };
                check_bounds("offset_seconds", clock.now())?;
                clock
            }
            (None, None, None) => {
                return Err(Error::bad_request(
                    "send {\"frozen_at\": \"<date-time>\"}, {\"mode\": \"frozen\"}, {\"offset_seconds\": N} or {\"mode\": \"real\"}",
                ))
            }
            (Some(m @ ("real" | "frozen" | "offset")), _, _) => {
                let given: Vec<&str> = [
                    ("frozen_at", self.frozen_at.is_some()),
                    ("offset_seconds", self.offset_seconds.is_some()),
                ]
                .into_iter()
                .filter_map(|(name, set)| set.then_some(name))
                .collect();
                return Err(Error::bad_request(format!(
                    "{} does not go with mode {m} (real: nothing else; frozen: frozen_at or nothing; offset: offset_seconds)",
                    if given.is_empty() { "nothing".to_string() } else { given.join(" and ") }
                )));
            }
            (None, _, _) => {
                return Err(Error::bad_request(
                    "frozen_at and offset_seconds do not go together",
                ))
            }
            (Some(other), _, _) => {
                return Err(Error::bad_request(format!(
                    "mode: {} is not real, frozen or offset",
                    crate::error::quoted(other)
                )))
            }
        };
        Ok(clock)
    }
}

/// Where an advance goes: forward by a number of seconds, or to an instant.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Forward by this many seconds (1 to [`MAX_ADVANCE_SECONDS`]).
    Seconds(i64),
    /// To this instant (after the clock's current reading, at most
    /// [`MAX_ADVANCE_SECONDS`] ahead).
    To(DateTime<Utc>),
}

/// What an advance did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ClockAdvanced)]
pub struct Advanced {
    /// The clock after the advance.
    #[serde(flatten)]
    pub clock: ClockView,
    /// What the clock read before.
    #[schema(format = DateTime)]
    pub advanced_from: String,
    /// What it was advanced to.
    #[schema(format = DateTime)]
    pub advanced_to: String,
    /// The transitions that ran, in order.
    pub transitions: Vec<crate::domain::transitions::Transition>,
}

/// Advances the tenant's clock (never backwards) and runs the transitions due on the way,
/// all in `tx`. A frozen clock stays frozen at the target; a running one runs on ahead.
pub fn advance(tx: &Transaction<'_>, target: Target, tz: chrono_tz::Tz) -> Result<Advanced> {
    let clock = Clock::load(tx)?;
    let from = clock.now();
    let to = match target {
        Target::Seconds(n) if (1..=MAX_ADVANCE_SECONDS).contains(&n) => {
            from + chrono::Duration::seconds(n)
        }
        Target::Seconds(n) => {
            return Err(Error::bad_request(format!(
                "seconds: {n} is not between 1 and {MAX_ADVANCE_SECONDS} (the clock only moves forward, at most ten years at a time)"
            )))
        }
        Target::To(t) if t <= from => {
            return Err(Error::bad_request(format!(
                "to: {} is not after the clock's current time {}; an advance only moves forward (PUT the clock to set it back)",
                crate::time::to_storage(t),
                crate::time::to_storage(from)
            )))
        }
        Target::To(t) if (t - from).num_seconds() > MAX_ADVANCE_SECONDS => {
            return Err(Error::bad_request(format!(
                "to: more than {MAX_ADVANCE_SECONDS} seconds (ten years) ahead of the clock; advance in smaller steps"
            )))
        }
        Target::To(t) => t,
    };
    check_bounds("to", to)?;
    let transitions = crate::domain::transitions::run_due(tx, from, to, tz)?;
    let step = (to - from).num_milliseconds();
    let moved = match clock {
        Clock::Frozen(_) => Clock::Frozen(to),
        Clock::Real => Clock::Offset(step),
        Clock::Offset(ms) => Clock::Offset(ms.saturating_add(step)),
    };
    moved.store(tx)?;
    let render = |t: DateTime<Utc>| crate::time::render(&crate::time::to_storage(t), tz);
    Ok(Advanced {
        clock: moved.view(tz),
        advanced_from: render(from),
        advanced_to: render(to),
        transitions,
    })
}

/// 400 unless `t` lies within the clock's bounds (`field` names it in the message).
pub fn check_bounds(field: &str, t: DateTime<Utc>) -> Result<()> {
    let (min, max) = crate::time::test_clock::bounds();
    if t < min || t >= max {
        return Err(Error::bad_request(format!(
            "{field}: the clock shows instants from {MIN_YEAR}-01-01 to before {MAX_YEAR}-01-01 (UTC)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn bounds_are_checked() {
        let ok = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
        assert!(check_bounds("to", ok).is_ok());
        let late = Utc.with_ymd_and_hms(2100, 1, 1, 0, 0, 0).unwrap();
        assert!(check_bounds("to", late).is_err());
        let early = Utc.with_ymd_and_hms(1999, 12, 31, 0, 0, 0).unwrap();
        assert!(check_bounds("to", early).is_err());
    }
}
