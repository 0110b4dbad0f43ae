//! Dates relative to a tenant's clock, as fixture documents write them: `now`, then any number
//! of steps applied left to right, each `+N<unit>`, `-N<unit>` (add or subtract) or `/<unit>`
//! (round down to the start of that unit). Units: `s`, `m` (minutes), `h`, `d`, `w`, `M`
//! (months), `y`; a rounding may also spell `second`, `minute`, `hour`, `day`, `week` (weeks
//! start on Monday), `month`, `year`. Examples: `now-3M`, `now+14d`, `now-1M/month` (the
//! start of last month), `now/day`, `now/month+14d` (the 15th of this month).
//!
//! Arithmetic and rounding happen on the tenant's local calendar (its time zone): `+1d` is the
//! same local time one day later, `+1M` the same day of the next month (clamped to its last
//! day: Jan 31 + 1M is Feb 28 or 29). The result is written back as a date alone
//! (`YYYY-MM-DD`, meaning local midnight, as every date field reads it) when it falls on local
//! midnight, else as a UTC instant: either way exactly the instant computed.
//!
//! Invariant: the answer is text that `time::parse_date_or_datetime` accepts, or an error
//! saying what is wrong at which character.

use chrono::{
    DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike,
    Utc,
};
use chrono_tz::Tz;

/// Longest relative expression accepted (characters).
pub const MAX_LEN: usize = 64;

/// Whether `text` is meant as a relative date (it starts with `now`).
pub fn is_relative(text: &str) -> bool {
    text.starts_with("now")
}

/// Resolves a relative date `text` against `now` in `tz` (module doc), or says what is wrong.
pub fn resolve(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<String, String> {
    if text.len() > MAX_LEN {
        return Err(format!("a relative date has at most {MAX_LEN} characters"));
    }
    let rest = text.strip_prefix("now").ok_or_else(|| {
        "a relative date starts with 'now' (e.g. now-3M, now+14d, now-1M/month)".to_string()
    })?;
    let mut local = now.with_timezone(&tz).naive_local();
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let at = i + 4; // 1-based character position in the whole text
        let op = bytes[i];
        i += 1;
        match op {
            b'+' | b'-' => {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let n: i64 = rest[start..i]
                    .parse()
                    .ok()
                    .filter(|n| *n <= 100_000)
                    .ok_or_else(|| {
                        format!("expected a number (0 to 100000) at character {}", start + 4)
                    })?;
                let unit = rest[i..].chars().next().ok_or_else(|| {
                    format!(
                        "expected a unit (s, m, h, d, w, M, y) at character {}",
                        i + 4
                    )
                })?;
                i += unit.len_utf8();
                let n = if op == b'-' { -n } else { n };
                local = shift(local, n, unit)
                    .ok_or_else(|| format!("'{unit}' at character {} is not a unit (s, m, h, d, w, M, y), or the date leaves the calendar", i + 3))?;
            }
            b'/' => {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                local = round(local, &rest[start..i]).ok_or_else(|| {
                    format!(
                        "expected a unit to round to (day, week, month, year, hour, minute, second or d, w, M, y, h, m, s) at character {}",
                        start + 4
                    )
                })?;
            }
            _ => {
                return Err(format!(
                "expected '+', '-' or '/' at character {at} (e.g. now-3M, now+14d, now-1M/month)"
            ))
            }
        }
    }
    if !super::within_years(local.date()) {
        return Err("the date leaves years 1 to 9999".into());
    }
    if local.time() == NaiveTime::MIN {
        return Ok(local.date().format("%Y-%m-%d").to_string());
    }
    let instant = tz
        .from_local_datetime(&local)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(local + Duration::hours(1)))
                .earliest()
        })
        .ok_or_else(|| "the local time does not exist in the tenant's time zone".to_string())?;
    Ok(super::to_storage(instant.with_timezone(&Utc)))
}

fn shift(t: NaiveDateTime, n: i64, unit: char) -> Option<NaiveDateTime> {
    let months = |m: i64| {
        let k = Months::new(u32::try_from(m.unsigned_abs()).ok()?);
        if m < 0 {
            t.checked_sub_months(k)
        } else {
            t.checked_add_months(k)
        }
    };
    match unit {
        's' => t.checked_add_signed(Duration::try_seconds(n)?),
        'm' => t.checked_add_signed(Duration::try_minutes(n)?),
        'h' => t.checked_add_signed(Duration::try_hours(n)?),
        'd' => t.checked_add_signed(Duration::try_days(n)?),
        'w' => t.checked_add_signed(Duration::try_weeks(n)?),
        'M' => months(n),
        'y' => months(n.checked_mul(12)?),
        _ => None,
    }
}

fn round(t: NaiveDateTime, unit: &str) -> Option<NaiveDateTime> {
    let day = |d: NaiveDate| d.and_time(NaiveTime::MIN);
    let date = t.date();
    Some(match unit {
        "s" | "second" => t.date().and_hms_opt(t.hour(), t.minute(), t.second())?,
        "m" | "minute" => t.date().and_hms_opt(t.hour(), t.minute(), 0)?,
        "h" | "hour" => t.date().and_hms_opt(t.hour(), 0, 0)?,
        "d" | "day" => day(date),
        "w" | "week" => {
            day(date - Duration::days(i64::from(date.weekday().num_days_from_monday())))
        }
        "M" | "month" => day(NaiveDate::from_ymd_opt(date.year(), date.month(), 1)?),
        "y" | "year" => day(NaiveDate::from_ymd_opt(date.year(), 1, 1)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn steps_apply_left_to_right_on_the_local_calendar() {
        let now = at("2026-11-06T15:30:00Z");
        let utc = chrono_tz::UTC;
        let r = |e| resolve(e, now, utc).unwrap();
        assert_eq!(r("now"), "2026-11-06T15:30:00.000Z");
        assert_eq!(r("now/day"), "2026-11-06");
        assert_eq!(r("now-1M/month"), "2026-10-01");
        assert_eq!(r("now-22M/month+9d"), "2025-01-10");
        assert_eq!(r("now+14d"), "2026-11-20T15:30:00.000Z");
        assert_eq!(r("now-3M"), "2026-08-06T15:30:00.000Z");
        assert_eq!(r("now/week"), "2026-11-02");
        assert_eq!(r("now/y"), "2026-01-01");
        assert_eq!(r("now+1y/month-1d"), "2027-10-31");
        assert_eq!(r("now-1d/day+8h"), "2026-11-05T08:00:00.000Z");
        // Month arithmetic clamps to the month's last day.
        assert_eq!(
            resolve("now+1M/day", at("2027-01-31T10:00:00Z"), utc).unwrap(),
            "2027-02-28"
        );
        // Local calendar: 01:00 UTC is still the 5th in Chicago.
        let chicago: Tz = "America/Chicago".parse().unwrap();
        assert_eq!(
            resolve("now/day", at("2026-11-06T01:00:00Z"), chicago).unwrap(),
            "2026-11-05"
        );
        assert_eq!(
            resolve("now/day+8h", at("2026-11-06T01:00:00Z"), chicago).unwrap(),
            "2026-11-05T14:00:00.000Z"
        );
    }

    #[test]
    fn anything_else_is_refused_with_its_position() {
        let now = at("2026-11-06T15:30:00Z");
        let e = |s| resolve(s, now, chrono_tz::UTC).unwrap_err();
        assert!(
            e("now-3x").contains("'x' at character 6"),
            "{}",
            e("now-3x")
        );
        assert!(e("now-M").contains("number"), "{}", e("now-M"));
        assert!(e("now/fortnight").contains("round"));
        assert!(e("now 3d").contains("character 4"));
        assert!(e("now-3").contains("unit"));
        assert!(e("now+99999y").contains("years 1 to 9999"));
        assert!(e("now+100000M+100000y+100000y+100000y").contains("calendar"));
        assert!(e(&format!("now{}", "+1d".repeat(30))).contains("at most"));
    }
}
