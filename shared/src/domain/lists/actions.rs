//! Actions (platform event definitions) and their operations as Surface B lists them, at
//! the top and under a bill cycle.

use super::{id_text, load_children, load_in_order, List, Parent, RenderContext};
use crate::domain::actions::ACTION_TYPES;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

/// Filter and sort whitelist of actions.
pub static FIELDS: &[F] = &[
    F::new("id", "a.id", K::Integer).sortable(),
    F::new("name", "a.name", K::Text).sortable(),
    F::new("enabled", "a.enabled", K::Bool),
    F::new("friendly_name", "a.friendly_name", K::Text).sortable(),
    F::new("supports_approval", "a.supports_approval", K::Bool),
    F::new("action_type", "a.action_type", K::Enum(ACTION_TYPES)).sortable(),
    F::new("product_id", "a.product_id", K::Integer).sortable(),
    F::new("agreement_id", "a.agreement_id", K::Integer).sortable(),
    F::new("bill_cycle_id", "a.bill_cycle_id", K::Integer).sortable(),
    F::new("operations.name", "o.name", K::Text)
        .via("action_operations o WHERE o.action_id = a.id"),
    F::new("operations.operation_type", "o.operation_type", K::Text)
        .via("action_operations o WHERE o.action_id = a.id"),
];

/// The action list.
pub static SOURCE: ListSource = ListSource {
    noun: "action",
    fields: FIELDS,
    named_filters: &["product_id", "action_type", "agreement_id", "bill_cycle_id"],
    from: "actions a",
    id: "a.id",
};

/// The action list as Surface B serves it.
pub const LIST: List<Action> = List::plain(&SOURCE, load);

/// The actions of one bill cycle (over [`SOURCE`]'s alias `a`).
pub const BY_BILL_CYCLE: Parent = Parent {
    table: "bill_cycles",
    noun: "bill cycle",
    condition: "a.bill_cycle_id = ?",
};

/// An operation of an action.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Operation {
    operation_type: String,
    name: String,
    enabled: bool,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// An action as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Action {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    name: String,
    enabled: bool,
    #[schema(required = true)]
    friendly_name: Option<String>,
    supports_approval: bool,
    action_type: String,
    operations: Vec<Operation>,
}

/// Loads actions by id, in the order given.
pub fn load(conn: &Connection, ids: &[i64], _: &RenderContext) -> Result<Vec<Action>> {
    let mut operations = load_children(
        conn,
        "SELECT id, action_id, operation_type, name, enabled FROM action_operations WHERE action_id",
        "id",
        ids,
        |r| {
            Ok((
                r.get("action_id")?,
                Operation {
                    operation_type: r.get("operation_type")?,
                    name: r.get("name")?,
                    enabled: r.get("enabled")?,
                    id: id_text(r.get("id")?),
                },
            ))
        },
    )?;
    load_in_order(
        conn,
        "SELECT id, name, enabled, friendly_name, supports_approval, action_type FROM actions WHERE id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                Action {
                    id: id_text(id),
                    name: r.get("name")?,
                    enabled: r.get("enabled")?,
                    friendly_name: r.get("friendly_name")?,
                    supports_approval: r.get("supports_approval")?,
                    action_type: r.get("action_type")?,
                    operations: operations.remove(&id).unwrap_or_default(),
                },
            ))
        },
    )
}
