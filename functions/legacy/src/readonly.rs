//! Read-only entities that Surfaces B and C own: `agreements`, `agreementServices`,
//! `products` and `usageEvents`, with the same ids as there.

use crate::entity::{col, Entity, Filter};
use crate::xml::Node;
use rusqlite::Row;
use shared::domain::agreements::AGREEMENT_SERVICE_STATUSES;

/// Agreements.
pub static AGREEMENTS: Entity = Entity {
    collection: "agreements",
    element: "agreement",
    columns: "t.id, t.name, t.agreement_period, t.agreement_period_type, t.status, \
             t.end_action, t.valid_from, t.valid_to, t.minimum_amount, \
             t.minimum_amount_currency_type, t.prorate_on_cancel, t.preserve_service_price",
    from: "agreements t",
    filters: &[
        Filter::text("name", "t.name"),
        Filter::text("status", "t.status"),
    ],
    render: render_agreement,
};

fn render_agreement(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("agreement")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("name", r.get::<_, String>("name")?)
        .attr("agreementPeriod", r.get::<_, i64>("agreement_period")?)
        .attr(
            "agreementPeriodType",
            r.get::<_, String>("agreement_period_type")?,
        )
        .attr("status", r.get::<_, String>("status")?)
        .opt_attr("endAction", col::text(r, "end_action")?)
        .opt_attr("validFrom", col::time(r, "valid_from", tz)?)
        .opt_attr("validTo", col::time(r, "valid_to", tz)?)
        .opt_attr("minimumAmount", col::money(r, "minimum_amount")?)
        .opt_attr(
            "minimumAmountCurrencyType",
            col::text(r, "minimum_amount_currency_type")?,
        )
        .attr("prorateOnCancel", col::boolean(r, "prorate_on_cancel")?)
        .attr(
            "preserveServicePrice",
            col::boolean(r, "preserve_service_price")?,
        ))
}

/// Agreement services (the agreement of a service sold to an account).
pub static AGREEMENT_SERVICES: Entity = Entity {
    collection: "agreementServices",
    element: "agreementService",
    columns: "t.id, t.status, t.start_date, t.end_date, t.end_action, t.renewed, \
             t.accumulated_charges_amount, t.minimum_amount, t.minimum_amount_currency_code, \
             t.agreement_period, t.agreement_id, t.service_id, s.billing_account_id, s.product_id",
    from: "agreement_services t JOIN services s ON s.id = t.service_id",
    filters: &[
        Filter::one_of("status", "t.status", AGREEMENT_SERVICE_STATUSES),
        Filter::integer("agreementEid", "t.agreement_id"),
        Filter::integer("billingAccountEid", "s.billing_account_id"),
    ],
    render: render_agreement_service,
};

fn render_agreement_service(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("agreementService")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("status", r.get::<_, String>("status")?)
        .opt_attr("startDate", col::time(r, "start_date", tz)?)
        .opt_attr("endDate", col::time(r, "end_date", tz)?)
        .opt_attr("endAction", col::text(r, "end_action")?)
        .attr("renewed", col::boolean(r, "renewed")?)
        .opt_attr(
            "accumulatedChargesAmount",
            col::money(r, "accumulated_charges_amount")?,
        )
        .opt_attr("minimumAmount", col::money(r, "minimum_amount")?)
        .opt_attr(
            "minimumAmountCurrencyType",
            col::text(r, "minimum_amount_currency_code")?,
        )
        .attr("agreementPeriod", r.get::<_, i64>("agreement_period")?)
        .child(Node::new("agreement").attr("eid", r.get::<_, i64>("agreement_id")?))
        .child(Node::new("service").attr("eid", r.get::<_, i64>("service_id")?))
        .child(Node::new("billingAccount").attr("eid", r.get::<_, i64>("billing_account_id")?))
        .child(Node::new("product").attr("eid", r.get::<_, i64>("product_id")?)))
}

/// Products.
pub static PRODUCTS: Entity = Entity {
    collection: "products",
    element: "product",
    columns: "t.id, t.name, t.sku, t.external_product_number",
    from: "products t",
    filters: &[Filter::text("name", "t.name"), Filter::text("sku", "t.sku")],
    render: render_product,
};

fn render_product(r: &Row<'_>, _tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("product")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("name", r.get::<_, String>("name")?)
        .opt_attr("sku", col::text(r, "sku")?)
        .opt_attr(
            "externalProductNumber",
            col::text(r, "external_product_number")?,
        ))
}

/// Usage events as posted over Surface B (voided ones included, marked `voided`).
pub static USAGE_EVENTS: Entity = Entity {
    collection: "usageEvents",
    element: "usageEvent",
    columns: "t.id, t.request_id, t.service_resource_identifier, t.start_time, \
             t.end_time, t.usage_uom, t.usage_amount, t.reference_id, t.sequence_id, \
             t.total_charge, t.overwrite_counter, t.voided, t.billing_account_id, \
             t.agreement_service_id",
    from: "usage_events t",
    filters: &[
        Filter::integer("billingAccountEid", "t.billing_account_id"),
        Filter::text("referenceId", "t.reference_id"),
        Filter::text("serviceResourceIdentifier", "t.service_resource_identifier"),
        Filter::text("requestId", "t.request_id"),
    ],
    render: render_usage_event,
};

fn render_usage_event(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    let mut node = Node::new("usageEvent")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("requestId", r.get::<_, String>("request_id")?)
        .attr(
            "serviceResourceIdentifier",
            r.get::<_, String>("service_resource_identifier")?,
        )
        .opt_attr("startTime", col::time(r, "start_time", tz)?)
        .opt_attr("endTime", col::time(r, "end_time", tz)?)
        .attr("usageUom", r.get::<_, String>("usage_uom")?)
        .opt_attr("usageAmount", col::money(r, "usage_amount")?)
        .opt_attr("referenceId", col::text(r, "reference_id")?)
        .opt_attr("sequenceId", col::text(r, "sequence_id")?)
        .opt_attr("totalCharge", col::money(r, "total_charge")?)
        .attr("overwriteCounter", r.get::<_, i64>("overwrite_counter")?)
        .attr("voided", col::boolean(r, "voided")?);
    if let Some(eid) = col::int(r, "billing_account_id")? {
        node = node.child(Node::new("billingAccount").attr("eid", eid));
    }
    if let Some(eid) = col::int(r, "agreement_service_id")? {
        node = node.child(Node::new("agreementService").attr("eid", eid));
    }
    Ok(node)
}
