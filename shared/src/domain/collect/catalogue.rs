//! The collector catalogue: the collectors a run can name, each with the category that picks
//! the source it reads (see [`super`]). Listing shows the tenant's catalogue and, after it,
//! the platform's collector operations every run accepts.

use super::super::insert;
use super::{PLATFORM_GROUP, PLATFORM_OPERATIONS};
use crate::query::{Page, Paged};
use crate::Result;
use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};

/// A collector of the catalogue.
#[derive(Debug, Clone, Deserialize)]
pub struct NewCollector {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique name.
    pub name: String,
    /// Friendly name.
    pub friendly_name: String,
    /// Description.
    pub description: Option<String>,
    /// Group.
    pub group: String,
    /// Category.
    pub category: String,
}

/// Adds a collector to the catalogue.
pub fn create_collector(tx: &Transaction<'_>, c: &NewCollector) -> Result<i64> {
    insert(
        tx,
        "collectors",
        &[
            ("id", &c.id),
            ("name", &c.name),
            ("friendly_name", &c.friendly_name),
            ("description", &c.description),
            ("group", &c.group),
            ("category", &c.category),
        ],
    )
}

/// A collector of the catalogue as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Collector {
    /// Unique name (what `collector_operations` names).
    pub name: String,
    /// Display name.
    pub friendly_name: String,
    /// Description.
    #[schema(required = true)]
    pub description: Option<String>,
    /// Group.
    pub group: String,
    /// Category: picks the source the collector reads.
    pub category: String,
}

/// One page of the collectors a run can name, optionally of one group and/or category: the
/// tenant's catalogue (by id), then the platform operations ([`PLATFORM_OPERATIONS`], group
/// [`PLATFORM_GROUP`]) in their order, less any whose name the catalogue already uses (a run
/// resolves such a name to the catalogue's collector). The catalogue is seed data of a few
/// rows, so the two are joined and paged here rather than in SQL.
pub fn list_collectors(
    conn: &Connection,
    group: Option<String>,
    category: Option<String>,
    page: Page,
) -> Result<Paged<Collector>> {
    let catalogue: Vec<Collector> = conn
        .prepare_cached(
            "SELECT name, friendly_name, description, \"group\", category FROM collectors
             ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(Collector {
                name: r.get(0)?,
                friendly_name: r.get(1)?,
                description: r.get(2)?,
                group: r.get(3)?,
                category: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let platform: Vec<Collector> = PLATFORM_OPERATIONS
        .iter()
        .filter(|op| !catalogue.iter().any(|c| c.name == op.name))
        .map(|op| Collector {
            name: op.name.to_string(),
            friendly_name: op.friendly_name.to_string(),
            description: Some(op.description.to_string()),
            group: PLATFORM_GROUP.to_string(),
            category: op.category.to_string(),
        })
        .collect();
    let matching: Vec<Collector> = catalogue
        .into_iter()
        .chain(platform)
        .filter(|c| group.as_ref().is_none_or(|g| *g == c.group))
        .filter(|c| category.as_ref().is_none_or(|k| *k == c.category))
        .collect();
    let total = i64::try_from(matching.len()).unwrap_or(i64::MAX);
    let (limit, offset) = page.limit_offset();
    let items = matching
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(0))
        .collect();
    Ok(Paged { items, total, page })
}
