//! Read-only entities that Surfaces B and C own: `agreements`, `agreementServices`,
//! `products` and `usageEvents`, with the same ids as there.

use crate::entity::{Child, Entity, Field, Key};
use shared::domain::agreements::AGREEMENT_SERVICE_STATUSES;

/// Agreements.
pub static AGREEMENTS: Entity = Entity {
    collection: "agreements",
    element: "agreement",
    fields: &[
        Field::long("eid", "id"),
        Field::text("name", "name"),
        Field::long("agreementPeriod", "agreement_period"),
        Field::text("agreementPeriodType", "agreement_period_type"),
        Field::text("status", "status"),
        Field::text("endAction", "end_action"),
        Field::time("validFrom", "valid_from"),
        Field::time("validTo", "valid_to"),
        Field::money("minimumAmount", "minimum_amount"),
        Field::text("minimumAmountCurrencyType", "minimum_amount_currency_type"),
        Field::boolean("prorateOnCancel", "prorate_on_cancel"),
        Field::boolean("preserveServicePrice", "preserve_service_price"),
    ],
    children: &[],
    records: &shared::domain::lists::agreements::RECORDS,
    keys: &[Key::new("name", "name"), Key::new("status", "status")],
};

/// Agreement services (the agreement of a service sold to an account).
pub static AGREEMENT_SERVICES: Entity = Entity {
    collection: "agreementServices",
    element: "agreementService",
    fields: &[
        Field::long("eid", "id"),
        Field::one_of("status", "status", AGREEMENT_SERVICE_STATUSES),
        Field::time("startDate", "start_date"),
        Field::time("endDate", "end_date"),
        Field::text("endAction", "end_action"),
        Field::boolean("renewed", "renewed"),
        Field::money("accumulatedChargesAmount", "accumulated_charges_amount"),
        Field::money("minimumAmount", "minimum_amount"),
        Field::text("minimumAmountCurrencyType", "minimum_amount_currency_code"),
        Field::long("agreementPeriod", "agreement_period"),
    ],
    children: &[
        reference("agreement", "agreement_id"),
        reference("service", "service_id"),
        reference("billingAccount", "billing_account_id"),
        reference("product", "product_id"),
    ],
    records: &shared::domain::lists::agreement_services::RECORDS,
    keys: &[
        Key::new("status", "status"),
        Key::new("agreementEid", "agreement_id"),
        Key::new("billingAccountEid", "billing_account_id"),
    ],
};

/// Products (the catalogue).
pub static PRODUCTS: Entity = Entity {
    collection: "products",
    element: "product",
    fields: &[
        Field::long("eid", "id"),
        Field::text("name", "name"),
        Field::text("sku", "sku"),
        Field::text("externalProductNumber", "external_product_number"),
    ],
    children: &[],
    records: &shared::domain::lists::products::RECORDS,
    keys: &[Key::new("name", "name"), Key::new("sku", "sku")],
};

/// Usage events as posted over Surface B (voided ones included, marked `voided`).
pub static USAGE_EVENTS: Entity = Entity {
    collection: "usageEvents",
    element: "usageEvent",
    fields: &[
        Field::long("eid", "id"),
        Field::text("requestId", "request_id"),
        Field::text("serviceResourceIdentifier", "service_resource_identifier"),
        Field::time("startTime", "start_time"),
        Field::time("endTime", "end_time"),
        Field::text("usageUom", "usage_uom"),
        Field::money("usageAmount", "usage_amount"),
        Field::text("referenceId", "reference_id"),
        Field::text("sequenceId", "sequence_id"),
        Field::money("totalCharge", "total_charge"),
        Field::long("overwriteCounter", "overwrite_counter"),
        Field::boolean("voided", "voided"),
    ],
    children: &[
        reference("billingAccount", "billing_account_id"),
        reference("agreementService", "agreement_service_id"),
    ],
    records: &shared::domain::lists::usage_events::RECORDS,
    keys: &[
        Key::new("billingAccountEid", "billing_account_id"),
        Key::new("referenceId", "reference_id"),
        Key::new("serviceResourceIdentifier", "service_resource_identifier"),
        Key::new("requestId", "request_id"),
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
