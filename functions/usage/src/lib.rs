//! Route group `usage`: Surface B's usage events under `/billing/2` (bulk posting, bulk
//! simulation, reading rated events back), served by their own Lambda. Their rows, handlers
//! and document live with the rest of Surface B (`billing::routes`, one table per surface);
//! this crate mounts the rows of its group.

use axum::Router;
use billing::routes::Group;
use shared::web::AppState;

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    billing::routes::group(Group::Usage)
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}
