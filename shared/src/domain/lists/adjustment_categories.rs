//! Adjustment categories: the charge categories of type Adjustment, as Surface B lists them.

use super::{id_text, load_in_order, List, RenderContext};
use crate::domain::catalog::CategoryStatus;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

/// Statuses of an adjustment category ([`CategoryStatus`]'s names).
pub const STATUSES: &[&str] = CategoryStatus::NAMES;

/// Filter and sort whitelist of adjustment categories.
pub static FIELDS: &[F] = &[
    F::new("id", "c.id", K::Integer).sortable(),
    F::new("name", "c.name", K::Text).sortable(),
    F::new("description", "c.description", K::Text).sortable(),
    F::new("priority", "c.priority", K::Integer).sortable(),
    F::new("status", "c.status", K::Enum(STATUSES)).sortable(),
    F::new("charge_category_type", "c.charge_category_type", K::Text),
];

/// The adjustment category list (scoped to type Adjustment by [`SCOPE`]).
pub static SOURCE: ListSource = ListSource {
    noun: "adjustment category",
    fields: FIELDS,
    named_filters: &["name", "status"],
    from: "charge_categories c",
    id: "c.id",
};

/// The condition that makes a charge category an adjustment category.
pub const SCOPE: &str = "c.charge_category_type = 'Adjustment'";

/// The adjustment category list as Surface B serves it: charge categories of type
/// Adjustment only.
pub const LIST: List<AdjustmentCategory> = List {
    always: Some(SCOPE),
    ..List::plain(&SOURCE, load)
};

/// An adjustment category as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AdjustmentCategory {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    charge_category_type: String,
    name: String,
    #[schema(required = true)]
    description: Option<String>,
    priority: i64,
    #[schema(schema_with = crate::domain::enum_schemas::category_status)]
    status: String,
}

/// Loads adjustment categories by id, in the order given (other categories are skipped).
pub fn load(conn: &Connection, ids: &[i64], _: &RenderContext) -> Result<Vec<AdjustmentCategory>> {
    load_in_order(
        conn,
        "SELECT id, charge_category_type, name, description, priority, status
         FROM charge_categories c WHERE c.charge_category_type = 'Adjustment' AND id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                AdjustmentCategory {
                    id: id_text(id),
                    charge_category_type: r.get("charge_category_type")?,
                    name: r.get("name")?,
                    description: r.get("description")?,
                    priority: r.get("priority")?,
                    status: r.get("status")?,
                },
            ))
        },
    )
}
