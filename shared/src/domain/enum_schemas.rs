//! The JSON Schema of the domain's string enumerations, for the OpenAPI documents (the
//! `schema_with` functions of the `ToSchema` derives on domain types): each is built from the
//! constant the domain checks against, so the document lists what the server takes. A
//! module that uses one of these functions itself keeps its own enumerations (e.g.
//! `ledgers::ledger_status`), so that this module stays below it and the domain's modules
//! form no cycle.

use crate::json_schema::{enumeration, nullable_enumeration};
use utoipa::openapi::{Object, Schema};

/// A currency code.
pub fn currency() -> Object {
    enumeration(crate::money::CURRENCY_CODES)
}

/// A currency code or null.
pub fn currency_or_null() -> Schema {
    nullable_enumeration(crate::money::CURRENCY_CODES)
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
