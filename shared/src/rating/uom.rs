//! Units of measure: every unit belongs to one family, and converts into any unit of its own
//! family through a factor to the family's base unit.
//!
//! Factors are decimal (SI): 1 KILOBYTE = 1000 BYTE, 1 KILOWATT = 1000 WATT, and so on, because
//! the platform's unit names are the SI prefixed ones (KILOBYTE, not KIBIBYTE) and the usage
//! sources that feed it (cloud transfer meters, network and energy meters) count in decimal
//! prefixes. `COUNT`, `EVENT` and `CURRENCY` stand alone: they convert only into themselves.

use rust_decimal::Decimal;

/// Every unit of measure a usage event may carry.
pub const USAGE_UOMS: &[&str] = &[
    "MILLISECOND",
    "SECOND",
    "MINUTE",
    "HOUR",
    "DAY",
    "WEEK",
    "EVENT",
    "BYTE",
    "KILOBYTE",
    "MEGABYTE",
    "GIGABYTE",
    "TERABYTE",
    "COUNT",
    "BITS_PER_SECOND",
    "KILOBITS_PER_SECOND",
    "MEGABITS_PER_SECOND",
    "GIGABITS_PER_SECOND",
    "CURRENCY",
    "WATT",
    "KILOWATT",
    "MEGAWATT",
    "GIGAWATT",
    "WATTS_PER_HOUR",
    "KILOWATTS_PER_HOUR",
    "MEGAWATTS_PER_HOUR",
    "GIGAWATTS_PER_HOUR",
];

/// A family of units that convert into each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Durations; base MILLISECOND.
    Time,
    /// Data volumes; base BYTE.
    Data,
    /// Bit rates; base BITS_PER_SECOND.
    BitRate,
    /// Power; base WATT.
    Power,
    /// Energy; base WATTS_PER_HOUR (the platform's name for watt-hours).
    Energy,
    /// Counted items.
    Count,
    /// Counted events.
    Event,
    /// Money amounts (passed through).
    Currency,
}

/// Every unit with its family and its factor to the family's base unit.
const UNITS: &[(&str, Family, i64)] = &[
    ("MILLISECOND", Family::Time, 1),
    ("SECOND", Family::Time, 1_000),
    ("MINUTE", Family::Time, 60_000),
    ("HOUR", Family::Time, 3_600_000),
    ("DAY", Family::Time, 86_400_000),
    ("WEEK", Family::Time, 604_800_000),
    ("BYTE", Family::Data, 1),
    ("KILOBYTE", Family::Data, 1_000),
    ("MEGABYTE", Family::Data, 1_000_000),
    ("GIGABYTE", Family::Data, 1_000_000_000),
    ("TERABYTE", Family::Data, 1_000_000_000_000),
    ("BITS_PER_SECOND", Family::BitRate, 1),
    ("KILOBITS_PER_SECOND", Family::BitRate, 1_000),
    ("MEGABITS_PER_SECOND", Family::BitRate, 1_000_000),
    ("GIGABITS_PER_SECOND", Family::BitRate, 1_000_000_000),
    ("WATT", Family::Power, 1),
    ("KILOWATT", Family::Power, 1_000),
    ("MEGAWATT", Family::Power, 1_000_000),
    ("GIGAWATT", Family::Power, 1_000_000_000),
    ("WATTS_PER_HOUR", Family::Energy, 1),
    ("KILOWATTS_PER_HOUR", Family::Energy, 1_000),
    ("MEGAWATTS_PER_HOUR", Family::Energy, 1_000_000),
    ("GIGAWATTS_PER_HOUR", Family::Energy, 1_000_000_000),
    ("COUNT", Family::Count, 1),
    ("EVENT", Family::Event, 1),
    ("CURRENCY", Family::Currency, 1),
];

/// Every unit name, in the platform's order of the `usage_uom` enum.
pub fn names() -> impl Iterator<Item = &'static str> {
    UNITS.iter().map(|(n, _, _)| *n)
}

fn unit(name: &str) -> Option<(Family, Decimal)> {
    UNITS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, f, factor)| (*f, Decimal::from(*factor)))
}

/// The family of a unit, `None` for a name that is no unit.
pub fn family(name: &str) -> Option<Family> {
    unit(name).map(|(f, _)| f)
}

/// `amount` of unit `from` expressed in unit `to`; `None` when the units are of different
/// families (or unknown). Exact where the decimal result terminates within 28 digits.
pub fn convert(amount: Decimal, from: &str, to: &str) -> Option<Decimal> {
    let (from_family, from_factor) = unit(from)?;
    let (to_family, to_factor) = unit(to)?;
    if from_family != to_family {
        return None;
    }
    if from_factor == to_factor {
        return Some(amount);
    }
    amount
        .checked_mul(from_factor)
        .and_then(|base| base.checked_div(to_factor))
        .or_else(|| amount.checked_div(to_factor / from_factor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn converts_within_a_family() {
        assert_eq!(convert(d("1500"), "MEGABYTE", "GIGABYTE"), Some(d("1.5")));
        assert_eq!(convert(d("1"), "KILOBYTE", "BYTE"), Some(d("1000")));
        assert_eq!(convert(d("90"), "MINUTE", "HOUR"), Some(d("1.5")));
        assert_eq!(convert(d("2"), "WEEK", "DAY"), Some(d("14")));
        assert_eq!(
            convert(d("2500"), "WATTS_PER_HOUR", "KILOWATTS_PER_HOUR"),
            Some(d("2.5"))
        );
        assert_eq!(
            convert(d("3"), "GIGABITS_PER_SECOND", "MEGABITS_PER_SECOND"),
            Some(d("3000"))
        );
        assert_eq!(convert(d("7"), "COUNT", "COUNT"), Some(d("7")));
    }

    #[test]
    fn refuses_across_families() {
        assert_eq!(convert(d("1"), "COUNT", "EVENT"), None);
        assert_eq!(convert(d("1"), "WATT", "WATTS_PER_HOUR"), None);
        assert_eq!(convert(d("1"), "HOUR", "GIGABYTE"), None);
        assert_eq!(convert(d("1"), "CURRENCY", "COUNT"), None);
        assert_eq!(convert(d("1"), "PARSEC", "COUNT"), None);
    }

    #[test]
    fn every_platform_unit_is_known() {
        for n in USAGE_UOMS {
            assert!(family(n).is_some(), "{n}");
        }
        assert_eq!(names().count(), USAGE_UOMS.len());
    }
}
