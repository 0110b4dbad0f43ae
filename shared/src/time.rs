//! Date-times: stored in UTC with a fixed-width RFC 3339 form (so text order is time order),
//! rendered with the tenant's UTC offset, parsed from a date or a date-time; "now" is real
//! time ([`now`]) or a tenant's test clock ([`now_for`]).

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;

/// Real time: for credentials, token expiry and the sandbox's own bookkeeping. Tenant data
/// reads the tenant's test clock instead ([`now_for`]).
pub fn now() -> DateTime<Utc> {
    Utc::now()
}

pub mod relative;
pub mod test_clock;

/// The current time of the tenant whose database `conn` is: its test clock (see [`test_clock`];
/// setting it is a sandbox power). Every time stamped into tenant data is read here, on the
/// transaction that stores it (a value read before it could predate a clock change that
/// committed in between).
pub fn now_for(conn: &rusqlite::Connection) -> crate::Result<DateTime<Utc>> {
    test_clock::now_for(conn)
}

/// The stored form of an instant: `YYYY-MM-DDTHH:MM:SS.mmmZ` (chrono's RFC 3339 with
/// milliseconds, cut, not rounded).
///
/// Written digit by digit for the instants of years 1 to 9999 outside leap seconds, which is
/// every instant stored from a client (posting writes two per event, and chrono's formatter
/// took 7% of checking a bulk call); the rest go through chrono. A test compares the two.
pub fn to_storage(t: DateTime<Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let (year, nanos) = (t.year(), t.nanosecond());
    if !(MIN_YEAR..=MAX_YEAR).contains(&year) || nanos >= 1_000_000_000 {
        return t.to_rfc3339_opts(SecondsFormat::Millis, true);
    }
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, value: u32, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year.unsigned_abs(), 4);
    put(5, t.month(), 2);
    put(8, t.day(), 2);
    put(11, t.hour(), 2);
    put(14, t.minute(), 2);
    put(17, t.second(), 2);
    put(20, nanos / 1_000_000, 3);
    // ASCII digits and separators only.
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a stored instant (any RFC 3339 form is accepted).
pub fn from_storage(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Renders a stored instant in the tenant's zone with its offset, e.g.
/// `2018-12-25T00:00:00-06:00`. Text that is not a stored instant is returned unchanged.
///
/// The same instant renders in UTC (`...Z`) where the zone cannot show it as RFC 3339 says:
/// when its local date leaves years [`MIN_YEAR`]..=[`MAX_YEAR`] (`9999-12-31T23:00Z` east of
/// UTC would read `+10000-...`, `0001-01-01T00:00Z` west of it `0000-...`), or when the zone's
/// offset then is not a whole number of minutes (local mean times before standard time, such
/// as Chicago's -05:50:36, which RFC 3339 cannot write: rounded, the text would name another
/// instant). Every rendered text is thus accepted back by [`parse_date_or_datetime`].
pub fn render(stored: &str, tz: Tz) -> String {
    match from_storage(stored) {
        Some(t) => render_instant(t, tz),
        None => stored.to_string(),
    }
}

/// What [`render`] answers for the stored text of `t` (`render(&to_storage(t), tz)`), without
/// writing and parsing that text: `t` is cut to the milliseconds storage keeps.
pub fn render_as_stored(t: DateTime<Utc>, tz: Tz) -> String {
    use chrono::SubsecRound;
    render_instant(t.trunc_subsecs(3), tz)
}

/// [`render`] of an instant already parsed.
fn render_instant(t: DateTime<Utc>, tz: Tz) -> String {
    use chrono::Offset;
    let local = t.with_timezone(&tz);
    let whole_minutes = local.offset().fix().local_minus_utc() % 60 == 0;
    if whole_minutes && within_years(local.date_naive()) {
        local.to_rfc3339_opts(SecondsFormat::AutoSi, false)
    } else {
        t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
    }
}

/// Earliest year of a date a client submits (any surface): year 0 and before are refused.
pub const MIN_YEAR: i32 = 1;
/// Latest year of a date a client submits: the last of RFC 3339's four-digit years, so every
/// stored instant keeps its fixed-width text (text order is time order) and renders as RFC
/// 3339. `9999-12-31` stays usable as "no end".
pub const MAX_YEAR: i32 = 9999;

/// The stored text of the last instant a submitted date can reach (see [`MAX_YEAR`]).
pub const LATEST_STORED: &str = "9999-12-31T23:59:59.999Z";

/// Whether a submitted calendar day is within [`MIN_YEAR`]..=[`MAX_YEAR`].
pub fn within_years(d: NaiveDate) -> bool {
    use chrono::Datelike;
    (MIN_YEAR..=MAX_YEAR).contains(&d.year())
}

/// Parses a date-time with an offset (RFC 3339), or a date alone (midnight in `tz`), or a
/// date-time without offset (local time in `tz`). `None` when it is none of these, or when
/// the date or its UTC instant lies outside years [`MIN_YEAR`]..=[`MAX_YEAR`].
pub fn parse_date_or_datetime(s: &str, tz: Tz) -> Option<DateTime<Utc>> {
    parse_unbounded(s, tz).filter(|t| within_years(t.date_naive()))
}

/// The message for text [`parse_date_or_datetime`] refuses (the value quoted by its first
/// characters, see [`crate::error::quoted`]); callers put the field's name before it.
pub fn not_a_date(text: &str) -> String {
    format!(
        "{} is not a date (YYYY-MM-DD) or an RFC 3339 date-time of years {MIN_YEAR:04}..{MAX_YEAR}",
        crate::error::quoted(text)
    )
}

/// [`parse_date_or_datetime`] without the year bound (the day as written is still checked).
fn parse_unbounded(s: &str, tz: Tz) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return within_years(t.date_naive()).then(|| t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return wall_clock_to_utc(d.and_hms_opt(0, 0, 0)?, tz);
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return wall_clock_to_utc(t, tz);
        }
    }
    None
}

/// A wall-clock time in `tz` as an instant, when its day is within the years (the instant's
/// own day is checked by the callers): how a date or a date-time without offset is read.
fn wall_clock_to_utc(t: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    within_years(t.date())
        .then(|| local_to_utc(t, tz))
        .flatten()
}

/// The stored form of a wall-clock time in `tz`, exactly as [`parse_date_or_datetime`] reads
/// the same time written without an offset (the stored instant of
/// `to_storage(parse_date_or_datetime("YYYY-MM-DDTHH:MM:SS", tz))`), without writing and
/// parsing text: `None` when the time or its UTC instant lies outside years
/// [`MIN_YEAR`]..=[`MAX_YEAR`]. Generated dates (a service's 36 monthly periods) take it.
pub fn local_to_storage(t: NaiveDateTime, tz: Tz) -> Option<String> {
    wall_clock_to_utc(t, tz)
        .filter(|u| within_years(u.date_naive()))
        .map(to_storage)
}

/// Local wall-clock time in `tz` to UTC; in a DST gap the later instant is taken.
fn local_to_utc(t: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    tz.from_local_datetime(&t)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(t + chrono::Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
}

/// Parses an IANA time-zone name.
pub fn parse_tz(name: &str) -> Option<Tz> {
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_is_midnight_in_tenant_zone() {
        let tz: Tz = "America/Chicago".parse().unwrap();
        let t = parse_date_or_datetime("2018-12-25", tz).unwrap();
        assert_eq!(to_storage(t), "2018-12-25T06:00:00.000Z");
        assert_eq!(render(&to_storage(t), tz), "2018-12-25T00:00:00-06:00");
    }

    #[test]
    fn instants_a_zone_cannot_write_render_in_utc() {
        let east: Tz = "Pacific/Kiritimati".parse().unwrap();
        let west: Tz = "America/Chicago".parse().unwrap();
        for (stored, tz, shown) in [
            ("9999-12-31T23:00:00.000Z", east, "9999-12-31T23:00:00Z"),
            (
                "9999-12-31T09:00:00.000Z",
                east,
                "9999-12-31T23:00:00+14:00",
            ),
            ("0001-01-01T00:00:00.000Z", west, "0001-01-01T00:00:00Z"),
            ("1800-06-01T12:00:00.000Z", west, "1800-06-01T12:00:00Z"),
            (
                "1900-06-01T12:00:00.000Z",
                west,
                "1900-06-01T06:00:00-06:00",
            ),
        ] {
            let text = render(stored, tz);
            assert_eq!(text, shown, "{stored} in {tz}");
            let back = parse_date_or_datetime(&text, tz).map(to_storage);
            assert_eq!(back.as_deref(), Some(stored), "{text}");
        }
    }

    #[test]
    fn offsets_are_kept_as_instants() {
        let tz: Tz = "UTC".parse().unwrap();
        let t = parse_date_or_datetime("2024-03-01T10:00:00+02:00", tz).unwrap();
        assert_eq!(to_storage(t), "2024-03-01T08:00:00.000Z");
        assert!(parse_date_or_datetime("yesterday", tz).is_none());
    }

    #[test]
    fn to_storage_writes_what_chrono_writes() {
        let chrono = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut instants: Vec<DateTime<Utc>> = [
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "2016-12-31T23:59:60.5Z",
            "2026-02-01T16:00:00.000999Z",
            "1970-01-01T00:00:00Z",
        ]
        .iter()
        .map(|t| DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc))
        .collect();
        // Spread over the years and beyond them (chrono's own form there), at odd fractions.
        let mut seconds: i64 = -62_200_000_000;
        while seconds < 253_500_000_000 {
            let nanos = (seconds.unsigned_abs() % 1_000_000_000) as u32;
            instants.push(DateTime::from_timestamp(seconds, nanos).unwrap());
            seconds += 97_777_777;
        }
        for t in instants {
            assert_eq!(to_storage(t), chrono(t), "{t:?}");
        }
    }

    #[test]
    fn render_as_stored_is_the_stored_text_rendered() {
        let submitted = [
            "2026-02-01T10:00:00-06:00",
            "2026-02-01T10:00:00.123456789-06:00",
            "2026-02-01T10:00:00.9999+05:45",
            "2016-12-31T23:59:60.5Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999Z",
            "1850-06-01T12:00:00Z",
            "2026-02-01",
            "2024-03-10T02:30",
        ];
        for zone in [
            "America/Chicago",
            "Asia/Kathmandu",
            "Pacific/Kiritimati",
            "UTC",
        ] {
            let tz = parse_tz(zone).unwrap();
            for text in submitted {
                let Some(t) = parse_date_or_datetime(text, tz) else {
                    continue;
                };
                assert_eq!(
                    render_as_stored(t, tz),
                    render(&to_storage(t), tz),
                    "{zone} {text}"
                );
            }
        }
    }

    /// `local_to_storage` is the text round trip it replaced (a service's periods): the same
    /// stored instant, or none, for every midnight of a DST change (a gap in Chicago at 02:00,
    /// in Santiago at midnight itself), ordinary days, zones east and west, and the years'
    /// edges.
    #[test]
    fn local_to_storage_is_the_written_time_parsed() {
        let zones = [
            "America/Chicago",
            "America/Santiago",
            "Asia/Tokyo",
            "Pacific/Kiritimati",
            "UTC",
        ];
        let days = [
            (1, 1, 1),
            (2024, 3, 10),
            (2024, 9, 8),
            (2024, 11, 3),
            (2025, 1, 31),
            (9999, 12, 1),
            (9999, 12, 31),
        ];
        for zone in zones {
            let tz = parse_tz(zone).unwrap();
            for (y, m, d) in days {
                for (h, min) in [(0, 0), (2, 30), (23, 59)] {
                    let t = NaiveDate::from_ymd_opt(y, m, d)
                        .unwrap()
                        .and_hms_opt(h, min, 0)
                        .unwrap();
                    let written = t.format("%Y-%m-%dT%H:%M:%S").to_string();
                    let parsed = parse_date_or_datetime(&written, tz).map(to_storage);
                    assert_eq!(local_to_storage(t, tz), parsed, "{zone} {written}");
                }
            }
        }
    }
}
