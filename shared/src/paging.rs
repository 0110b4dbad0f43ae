//! Paging parameters and headers. Surface C: `page_number` >= 1 (default 1), `page_size`
//! 1..50 (default 25), headers X-Total-Count, X-Elements-Count, X-Total-Pages. Surface B's
//! list machinery (its own limits and header names) builds on the same [`Page`].

use crate::{Error, Result};
use std::collections::HashMap;

/// A requested page: which one and how large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// 1-based page number.
    pub number: i64,
    /// Records per page.
    pub size: i64,
}

/// Limits of one surface's paging parameters.
#[derive(Debug, Clone, Copy)]
pub struct PagingRules {
    /// Smallest page_number accepted.
    pub min_number: i64,
    /// Smallest page_size accepted.
    pub min_size: i64,
    /// Largest page_size accepted.
    pub max_size: i64,
    /// page_size when none is given.
    pub default_size: i64,
}

/// Surface C's paging rules.
pub const REVENUE_PAGING: PagingRules = PagingRules {
    min_number: 1,
    min_size: 1,
    max_size: 50,
    default_size: 25,
};

impl Page {
    /// Reads `page_number` and `page_size` from query parameters under `rules`; anything out
    /// of range or not an integer is a 400 naming the parameter.
    pub fn from_params(params: &HashMap<String, String>, rules: PagingRules) -> Result<Page> {
        let number = int_param(
            params,
            "page_number",
            1,
            rules.min_number,
            i64::from(i32::MAX),
        )?;
        let size = int_param(
            params,
            "page_size",
            rules.default_size,
            rules.min_size,
            rules.max_size,
        )?;
        Ok(Page { number, size })
    }

    /// SQL `LIMIT ? OFFSET ?` values of this page.
    pub fn limit_offset(&self) -> (i64, i64) {
        (
            self.size,
            (self.number.max(1) - 1).saturating_mul(self.size),
        )
    }

    /// Number of pages for `total` records (0 when there are none).
    pub fn total_pages(&self, total: i64) -> i64 {
        if self.size <= 0 {
            0
        } else {
            (total + self.size - 1) / self.size
        }
    }
}

/// An integer query parameter within `min..=max`, or `default` when absent.
pub fn int_param(
    params: &HashMap<String, String>,
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64> {
    match params.get(name) {
        None => Ok(default),
        Some(raw) => {
            let v: i64 = raw
                .trim()
                .parse()
                .map_err(|_| Error::bad_request(format!("{name}: '{raw}' is not an integer")))?;
            if v < min || v > max {
                return Err(Error::bad_request(format!(
                    "{name}: {v} is out of range {min}..{max}"
                )));
            }
            Ok(v)
        }
    }
}

/// A page of results with the total it was cut from.
#[derive(Debug, Clone)]
pub struct Paged<T> {
    /// The records of this page.
    pub items: Vec<T>,
    /// All records matching.
    pub total: i64,
    /// The page served.
    pub page: Page,
}
