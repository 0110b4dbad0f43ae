//! Actions: the platform's event definitions (one of [`ACTION_TYPES`]) with their
//! operations, created for Surface B's `actions` resource and the seed. An action may belong
//! to a product, an agreement or a bill cycle, each of which must exist.

use super::{check_enum, insert, require};
use crate::Result;
use rusqlite::Transaction;
use serde::Deserialize;

/// Action types of the platform.
pub const ACTION_TYPES: &[&str] = &[
    "agreement",
    "agreement-service",
    "bill-cycle-run",
    "bill-batch-run",
    "billing-account",
    "counter",
    "credit-adjustment",
    "disbursement",
    "invoice",
    "payment",
    "product-sale",
    "remote-prepaid-register",
    "sales-order",
    "service",
    "service-cfv",
    "system-notification",
    "usage-rule",
];

/// An operation of an action.
#[derive(Debug, Clone, Deserialize)]
pub struct NewOperation {
    /// Operation type.
    pub operation_type: String,
    /// Display name.
    pub name: String,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

/// An action (a platform event definition) with its operations.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAction {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Friendly name.
    pub friendly_name: Option<String>,
    /// Supports approval.
    #[serde(default)]
    pub supports_approval: bool,
    /// One of [`ACTION_TYPES`].
    pub action_type: String,
    /// Product it belongs to.
    pub product_id: Option<i64>,
    /// Agreement it belongs to.
    pub agreement_id: Option<i64>,
    /// Bill cycle it belongs to.
    pub bill_cycle_id: Option<i64>,
    /// Operations.
    #[serde(default)]
    pub operations: Vec<NewOperation>,
}

/// Creates an action and its operations.
pub fn create_action(tx: &Transaction<'_>, a: &NewAction) -> Result<i64> {
    check_enum("action_type", &a.action_type, ACTION_TYPES)?;
    if let Some(id) = a.product_id {
        require(tx, "products", "product", id)?;
    }
    if let Some(id) = a.agreement_id {
        require(tx, "agreements", "agreement", id)?;
    }
    if let Some(id) = a.bill_cycle_id {
        require(tx, "bill_cycles", "bill cycle", id)?;
    }
    let id = insert(
        tx,
        "actions",
        &[
            ("id", &a.id),
            ("name", &a.name),
            ("enabled", &a.enabled),
            ("friendly_name", &a.friendly_name),
            ("supports_approval", &a.supports_approval),
            ("action_type", &a.action_type),
            ("product_id", &a.product_id),
            ("agreement_id", &a.agreement_id),
            ("bill_cycle_id", &a.bill_cycle_id),
        ],
    )?;
    for op in &a.operations {
        insert(
            tx,
            "action_operations",
            &[
                ("action_id", &id),
                ("operation_type", &op.operation_type),
                ("name", &op.name),
                ("enabled", &op.enabled),
            ],
        )?;
    }
    Ok(id)
}

super::fixture_columns_writer!("actions");
