//! Usage events as records (`super::records`), voided ones included; read by Surface A's
//! `usageEvents` (Surface B's list is `domain::usage::EVENT_LIST`, which renders the rated
//! event). Reads only: `domain::usage` writes the table.

use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The usage event records.
pub static RECORDS: ListSource = ListSource {
    noun: "usage event",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("request_id", "t.request_id", K::Text),
        F::new(
            "service_resource_identifier",
            "t.service_resource_identifier",
            K::Text,
        ),
        F::new("start_time", "t.start_time", K::DateTime),
        F::new("end_time", "t.end_time", K::DateTime),
        F::new("usage_uom", "t.usage_uom", K::Text),
        F::new("usage_amount", "t.usage_amount", K::Decimal),
        F::new("reference_id", "t.reference_id", K::Text),
        F::new("sequence_id", "t.sequence_id", K::Text),
        F::new("total_charge", "t.total_charge", K::Decimal),
        F::new("overwrite_counter", "t.overwrite_counter", K::Integer),
        F::new("voided", "t.voided", K::Bool),
        F::new("billing_account_id", "t.billing_account_id", K::Integer),
        F::new("agreement_service_id", "t.agreement_service_id", K::Integer),
    ],
    named_filters: &[
        "billing_account_id",
        "reference_id",
        "service_resource_identifier",
        "request_id",
    ],
    from: "usage_events t",
    id: "t.id",
};
