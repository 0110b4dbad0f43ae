//! Read-only entities that Surfaces B and C own: `agreements`, `agreementServices`,
//! `products` and `usageEvents`, with the same ids as there.

use crate::entity::{Child, Entity, Field};
use shared::domain::agreements::AGREEMENT_SERVICE_STATUSES;
use shared::query::{FieldKind as K, FieldSpec as F};

/// Agreements.
pub static AGREEMENTS: Entity = Entity {
    collection: "agreements",
    element: "agreement",
    fields: &[
        Field::long("eid", "t.id"),
        Field::text("name", "t.name"),
        Field::long("agreementPeriod", "t.agreement_period"),
        Field::text("agreementPeriodType", "t.agreement_period_type"),
        Field::text("status", "t.status"),
        Field::text("endAction", "t.end_action"),
        Field::time("validFrom", "t.valid_from"),
        Field::time("validTo", "t.valid_to"),
        Field::money("minimumAmount", "t.minimum_amount"),
        Field::text(
            "minimumAmountCurrencyType",
            "t.minimum_amount_currency_type",
        ),
        Field::boolean("prorateOnCancel", "t.prorate_on_cancel"),
        Field::boolean("preserveServicePrice", "t.preserve_service_price"),
    ],
    children: &[],
    from: "agreements t",
    filters: &[
        F::new("name", "t.name", K::Text),
        F::new("status", "t.status", K::Text),
    ],
};

/// Agreement services (the agreement of a service sold to an account).
pub static AGREEMENT_SERVICES: Entity = Entity {
    collection: "agreementServices",
    element: "agreementService",
    fields: &[
        Field::long("eid", "t.id"),
        Field::one_of("status", "t.status", AGREEMENT_SERVICE_STATUSES),
        Field::time("startDate", "t.start_date"),
        Field::time("endDate", "t.end_date"),
        Field::text("endAction", "t.end_action"),
        Field::boolean("renewed", "t.renewed"),
        Field::money("accumulatedChargesAmount", "t.accumulated_charges_amount"),
        Field::money("minimumAmount", "t.minimum_amount"),
        Field::text(
            "minimumAmountCurrencyType",
            "t.minimum_amount_currency_code",
        ),
        Field::long("agreementPeriod", "t.agreement_period"),
    ],
    children: &[
        reference("agreement", "t.agreement_id"),
        reference("service", "t.service_id"),
        reference("billingAccount", "s.billing_account_id"),
        reference("product", "s.product_id"),
    ],
    from: "agreement_services t JOIN services s ON s.id = t.service_id",
    filters: &[
        F::new("status", "t.status", K::Enum(AGREEMENT_SERVICE_STATUSES)),
        F::new("agreementEid", "t.agreement_id", K::Integer),
        F::new("billingAccountEid", "s.billing_account_id", K::Integer),
    ],
};

/// Products (the catalogue).
pub static PRODUCTS: Entity = Entity {
    collection: "products",
    element: "product",
    fields: &[
        Field::long("eid", "t.id"),
        Field::text("name", "t.name"),
        Field::text("sku", "t.sku"),
        Field::text("externalProductNumber", "t.external_product_number"),
    ],
    children: &[],
    from: "products t",
    filters: &[
        F::new("name", "t.name", K::Text),
        F::new("sku", "t.sku", K::Text),
    ],
};

/// Usage events as posted over Surface B (voided ones included, marked `voided`).
pub static USAGE_EVENTS: Entity = Entity {
    collection: "usageEvents",
    element: "usageEvent",
    fields: &[
        Field::long("eid", "t.id"),
        Field::text("requestId", "t.request_id"),
        Field::text("serviceResourceIdentifier", "t.service_resource_identifier"),
        Field::time("startTime", "t.start_time"),
        Field::time("endTime", "t.end_time"),
        Field::text("usageUom", "t.usage_uom"),
        Field::money("usageAmount", "t.usage_amount"),
        Field::text("referenceId", "t.reference_id"),
        Field::text("sequenceId", "t.sequence_id"),
        Field::money("totalCharge", "t.total_charge"),
        Field::long("overwriteCounter", "t.overwrite_counter"),
        Field::boolean("voided", "t.voided"),
    ],
    children: &[
        reference("billingAccount", "t.billing_account_id"),
        reference("agreementService", "t.agreement_service_id"),
    ],
    from: "usage_events t",
    filters: &[
        F::new("billingAccountEid", "t.billing_account_id", K::Integer),
        F::new("referenceId", "t.reference_id", K::Text),
        F::new(
            "serviceResourceIdentifier",
            "t.service_resource_identifier",
            K::Text,
        ),
        F::new("requestId", "t.request_id", K::Text),
    ],
};

/// `<element eid=""/>`: a reference carrying only the eid in `column`.
const fn reference(element: &'static str, column: &'static str) -> Child {
    Child::Ref {
        element,
        eid: column,
        fields: &[],
    }
}
