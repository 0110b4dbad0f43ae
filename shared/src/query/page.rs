//! A page of a list: which one and how large ([`Page`]), and what was read for it
//! ([`Paged`]). Reading a page off a request (each surface's parameter names and limits) is
//! the web glue's job (its `listing` module, a layer above); here is only the arithmetic every list shares.

/// A requested page: which one and how large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// 1-based page number.
    pub number: i64,
    /// Records per page.
    pub size: i64,
}

impl Page {
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
