//! The collector catalogue: the collectors a run can name, each with the category that picks
//! the source it reads (see [`super`]).

use super::super::insert;
use crate::query::{Page, Paged, Selection};
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
#[derive(Debug, Clone, Serialize)]
pub struct Collector {
    /// Unique name (what `collector_operations` names).
    pub name: String,
    /// Display name.
    pub friendly_name: String,
    /// Description.
    pub description: Option<String>,
    /// Group.
    pub group: String,
    /// Category: picks the source the collector reads.
    pub category: String,
}

/// One page of the collector catalogue, optionally of one group and/or category.
pub fn list_collectors(
    conn: &Connection,
    group: Option<String>,
    category: Option<String>,
    page: Page,
) -> Result<Paged<Collector>> {
    Selection::new("id")
        .scope_if("\"group\" = ?", group)
        .scope_if("category = ?", category)
        .page(page)
        .fetch_paged(
            conn,
            "name, friendly_name, description, \"group\", category",
            "collectors",
            |r| {
                Ok(Collector {
                    name: r.get(0)?,
                    friendly_name: r.get(1)?,
                    description: r.get(2)?,
                    group: r.get(3)?,
                    category: r.get(4)?,
                })
            },
        )
}
