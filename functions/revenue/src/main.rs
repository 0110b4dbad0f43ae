//! Lambda entry point of the `revenue` route group: configuration from the environment, the
//! group's router, served by lambda_http.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let config = shared::config::Config::from_env();
    shared::web::init_tracing(config.lambda);
    let state = shared::web::AppState::new(config)?;
    lambda_http::run(revenue::router(state)).await
}
