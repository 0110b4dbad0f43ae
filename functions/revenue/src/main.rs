//! Lambda entry point of the `revenue` route group: configuration from the environment, the
//! group's router, served by lambda_http.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::web::init_tracing();
    let state = shared::web::AppState::new(shared::config::Config::from_env())?;
    lambda_http::run(revenue::router(state)).await
}
