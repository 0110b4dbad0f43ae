//! Route group `billing`: Surface B's query and maintenance endpoints under `/billing/2`.
//! Handlers (in `handlers`) parse HTTP into typed input; reads go through a resource's list
//! source and loader (in `resources`) and the paged-query engine (`shared::query`), writes
//! through `shared::domain`; answers are rendered by `shared::web::listing`.

pub mod handlers;
pub mod openapi;
pub mod resources;

use axum::routing::get;
use axum::Router;
use handlers as h;
use shared::web::{AppState, BILLING_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    Router::new()
        .route(
            &p("/openapi.json"),
            get(|| async { openapi::DOCUMENT.answer() }),
        )
        .route(
            &p("/openapi-3.0.json"),
            get(|| async { openapi::DOCUMENT.answer_30() }),
        )
        .route(&p("/actions"), get(h::list_actions))
        .route(&p("/actions/{id}"), get(h::get_action))
        .route(
            &p("/bill-cycles/{bill_cycle_id}/actions"),
            get(h::list_bill_cycle_actions),
        )
        .route(
            &p("/bill-cycles/{bill_cycle_id}/actions/{id}"),
            get(h::get_bill_cycle_action),
        )
        .route(
            &p("/adjustment-applications"),
            get(h::list_adjustment_applications),
        )
        .route(
            &p("/adjustment-applications/{id}"),
            get(h::get_adjustment_application),
        )
        .route(
            &p("/adjustment-categories"),
            get(h::list_adjustment_categories),
        )
        .route(
            &p("/adjustment-categories/{id}"),
            get(h::get_adjustment_category),
        )
        .route(&p("/agreements"), get(h::list_agreements))
        .route(&p("/agreements/{id}"), get(h::get_agreement))
        .route(&p("/agreement-services"), get(h::list_agreement_services))
        .route(
            &p("/agreement-services/{id}"),
            get(h::get_agreement_service).put(h::update_agreement_service),
        )
        .route(
            &p("/agreement-services/{agreement_service_id}/true-up-charge-type-relations"),
            get(h::list_true_ups).post(h::create_true_up),
        )
        .route(
            &p("/agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}"),
            get(h::get_true_up).delete(h::delete_true_up),
        )
        .route(
            &p("/bill-batches"),
            get(h::list_bill_batches).post(h::create_bill_batch),
        )
        .route(&p("/bill-batches/{id}"), get(h::get_bill_batch))
        .route(
            &p("/bill-batches/{bill_batch_id}/billing-accounts"),
            get(h::list_bill_batch_accounts),
        )
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}
