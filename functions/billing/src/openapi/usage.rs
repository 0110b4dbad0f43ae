//! Usage events in Surface B's document: what the route table cannot name as one Rust type,
//! the example body of posting and the simulation's answer (a variant of `BulkOutcome`).

use serde_json::{json, Value};
use shared::domain::usage::{BulkOutcome, ErredEvent};
use shared::web::openapi::{array, Builder};

/// The example body of posting and simulating.
pub fn usage_example() -> Value {
    json!({ "mode": "OVERWRITE_ON_EXISTING", "usage_events": [
        { "service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE", "usage_amount": 90, "start_time": "2026-02-01", "reference_id": "batch-1", "sequence_id": "1" },
        { "service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 150, "start_time": "2026-02-01T10:00:00-06:00" },
    ]})
}

/// The answer of a simulation: what posting answers minus request_id; its ids name nothing
/// stored: "-1", "-2", ... in answer order. Its schemas are the rated event's with those
/// changes.
#[allow(
    clippy::expect_used,
    reason = "static document: BulkOutcome (with RatedEvent, EventCharge) is registered first, and derived object schemas have properties and required lists; the openapi tests build it"
)]
pub fn simulation(b: &mut Builder) -> Value {
    b.schema::<BulkOutcome>();
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
