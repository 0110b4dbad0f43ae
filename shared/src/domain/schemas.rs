//! The JSON Schema of the domain's string enumerations, for the OpenAPI documents (the
//! `schema_with` functions of the `ToSchema` derives on domain types): each is built from the
//! constant the domain checks against, so the document lists what the server takes.

use crate::schema::{enumeration, nullable_enumeration};
use utoipa::openapi::{Object, Schema};

/// A currency code.
pub fn currency() -> Object {
    enumeration(crate::money::CURRENCY_CODES)
}

/// A currency code or null.
pub fn currency_or_null() -> Schema {
    nullable_enumeration(crate::money::CURRENCY_CODES)
}

/// A ledger's status.
pub fn ledger_status() -> Object {
    enumeration(super::ledgers::LEDGER_STATUSES)
}

/// A ledger's currency conversion.
pub fn convert_currency() -> Object {
    enumeration(super::ledgers::CONVERT_CURRENCY)
}

/// A ledger or collector run's status.
pub fn run_status() -> Object {
    enumeration(super::glrun::RUN_STATUSES)
}

/// A collector run's type.
pub fn collector_run_type() -> Object {
    enumeration(super::collect::COLLECTOR_RUN_TYPES)
}

/// A charge info's state in a ledger, or null (no run has handled it).
pub fn charge_info_state_or_null() -> Schema {
    nullable_enumeration(super::chargeinfo::CHARGE_INFO_STATES)
}

/// The `type` of a calendar node.
pub fn period_type() -> Object {
    enumeration(&["PERIOD"])
}

/// The `type` of a calendar node.
pub fn year_type() -> Object {
    enumeration(&["YEAR"])
}

/// The `type` of a calendar node.
pub fn calendar_type() -> Object {
    enumeration(&["CALENDAR"])
}

/// An agreement service's status.
pub fn agreement_service_status() -> Object {
    enumeration(super::agreements::AGREEMENT_SERVICE_STATUSES)
}

/// A catalogue category's status (adjustment categories).
pub fn category_status() -> Object {
    enumeration(super::catalog::CATEGORY_STATUSES)
}

/// A bill batch's status.
pub fn bill_batch_status() -> Object {
    enumeration(super::bill_batches::BILL_BATCH_STATUSES)
}

/// A bill batch's type.
pub fn bill_batch_type() -> Object {
    enumeration(super::bill_batches::BILL_BATCH_TYPES)
}

/// A usage unit of measure.
pub fn usage_uom() -> Object {
    enumeration(crate::rating::uom::USAGE_UOMS)
}
