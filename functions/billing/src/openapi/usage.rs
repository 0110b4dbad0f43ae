//! Usage events in Surface B's document: posting and simulating (bodies `BulkRequest`,
//! answers `BulkOutcome` and the simulation's variant of it) and reading.

use super::operations::{filter, op, write, List};
use serde_json::{json, Value};
use shared::domain::usage::{BulkOutcome, BulkRequest, ErredEvent, RatedEvent};
use shared::web::openapi::{array, schema_value, string, Builder};
use shared::web::BILLING_PREFIX;

/// Usage events: posting, simulating, reading.
pub(super) fn usage(b: &mut Builder, e: &Value) {
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    b.named(
        "UsageEvent",
        schema_value(shared::domain::usage::usage_event()),
    );
    let request = b.schema::<BulkRequest>();
    let outcome = b.schema::<BulkOutcome>();
    let simulated = simulation(b);
    let example = json!({ "mode": "OVERWRITE_ON_EXISTING", "usage_events": [
        { "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90, "start_time": "2026-02-01", "reference_id": "batch-1", "sequence_id": "1" },
        { "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150, "start_time": "2026-02-01T10:00:00-06:00" },
    ]});
    const ERRORS: &[u16] = &[400, 401, 413, 415, 503];
    let post = op(
        "usage",
        "postUsageEvents",
        "Rate and store 1..50 usage events",
        e,
    )
    .body(request.clone(), true)
    .example(example.clone());
    let post = write(post, 200, outcome, &[], false).errors(ERRORS, e);
    b.operation(&p("/usage-events/bulk"), "post", post.build());
    let sim = op(
        "usage",
        "simulateUsageEvents",
        "Rate 1..50 usage events without storing anything",
        e,
    )
    .body(request, true)
    .example(example);
    let sim = write(sim, 200, simulated, &[], false).errors(ERRORS, e);
    b.operation(&p("/usage-events/simulate/bulk"), "post", sim.build());
    let rated = b.schema::<RatedEvent>();
    let filters = [
        "reference_id",
        "request_id",
        "service_period_id",
        "account_num",
        "billing_account_id",
        "sequence_id",
    ]
    .map(|name| filter(name, string()))
    .to_vec();
    let list = List {
        tag: "usage",
        ..List::new(filters)
    };
    list.collection(
        b,
        &p("/usage-events"),
        rated,
        [
            (
                "listUsageEvents",
                "Rated usage events (at least one narrowing parameter)",
            ),
            ("getUsageEvent", "One rated usage event (voided or live)"),
        ],
        e,
    );
}

/// A simulation answers what posting answers minus request_id; its ids name nothing stored:
/// "-1", "-2", ... in answer order. Its schemas are the rated event's with those changes.
#[allow(
    clippy::expect_used,
    reason = "static document: `usage` registers BulkOutcome (with RatedEvent, EventCharge) first, and derived object schemas have properties and required lists; the openapi tests build it"
)]
fn simulation(b: &mut Builder) -> Value {
    b.schema::<ErredEvent>();
    let sim_id = json!({
        "type": "string",
        "pattern": "^-[1-9][0-9]*$",
        "description": "Simulated id: -n for the n-th item of the answer; names nothing stored.",
    });
    let require_id = |schema: &mut Value| {
        let required = schema["required"].as_array_mut().expect("required");
        required.retain(|r| r != "id");
        required.insert(0, json!("id"));
    };
    let mut charge = b.get("EventCharge").expect("EventCharge").clone();
    charge["properties"]["id"] = sim_id.clone();
    require_id(&mut charge);
    charge["description"] = json!("An event charge of a simulation.");
    let charge = b.named("SimulatedEventCharge", charge);
    let mut event = b.get("RatedEvent").expect("RatedEvent").clone();
    let properties = event["properties"].as_object_mut().expect("properties");
    properties.remove("request_id");
    properties.insert("id".into(), sim_id);
    properties.insert("event_charges".into(), array(charge));
    require_id(&mut event);
    event["not"] = json!({ "required": ["request_id"] });
    event["description"] = json!("A rated event of a simulation: no request_id, a simulated id.");
    let event = b.named("SimulatedEvent", event);
    let erred = shared::web::openapi::reference("ErredEvent");
    b.named(
        "SimulationOutcome",
        json!({
            "type": "object",
            "properties": { "rated_events": array(event), "erred_events": array(erred) },
            "required": ["rated_events", "erred_events"],
        }),
    )
}
