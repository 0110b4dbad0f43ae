//! Rounding of charges to a currency's minor unit.
//!
//! Rule: round half away from zero ("half-up", as commercial invoicing does, not banker's
//! rounding) to the ISO 4217 minor unit of the currency: 2 decimals by default, 0 for JPY,
//! KRW, CLP and ISK, 3 for BHD, KWD and OMR.

use rust_decimal::{Decimal, RoundingStrategy};

/// Decimals of a currency's minor unit (ISO 4217) for the platform's currency set.
pub fn minor_units(currency: &str) -> u32 {
    match currency {
        "JPY" | "KRW" | "CLP" | "ISK" => 0,
        "BHD" | "KWD" | "OMR" => 3,
        _ => 2,
    }
}

/// `amount` rounded half away from zero to the minor unit of `currency`.
pub fn round(amount: Decimal, currency: &str) -> Decimal {
    amount.round_dp_with_strategy(
        minor_units(currency),
        RoundingStrategy::MidpointAwayFromZero,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn rounds_half_up_per_currency() {
        assert_eq!(round(d("0.125"), "USD"), d("0.13"));
        assert_eq!(round(d("0.135"), "USD"), d("0.14"));
        assert_eq!(round(d("0.124999"), "EUR"), d("0.12"));
        assert_eq!(round(d("-0.125"), "USD"), d("-0.13"));
        assert_eq!(round(d("1234.5"), "JPY"), d("1235"));
        assert_eq!(round(d("0.0005"), "KWD"), d("0.001"));
        assert_eq!(round(d("2"), "USD").to_string(), "2");
    }

    #[test]
    fn every_platform_currency_has_a_minor_unit() {
        for c in crate::money::CURRENCY_CODES {
            assert!(minor_units(c) <= 3, "{c}");
        }
    }
}
