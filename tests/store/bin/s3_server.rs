//! A stand-in for one more environment as its own OS process: serves the whole sandbox
//! (`sandbox::app`) over the S3 store named by `SANDBOX_S3_*` (AWS variables from the
//! environment), with admin key `ADMIN_KEY` and token secret `SECRET`, on an ephemeral
//! loopback port, and prints `listening http://127.0.0.1:PORT` once it accepts requests.
//! It runs until killed.
//!
//! Usage: `s3_server DATA_DIR ADMIN_KEY SECRET`

use std::io::Write;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, data_dir, admin_key, secret] = args.as_slice() else {
        eprintln!("usage: s3_server DATA_DIR ADMIN_KEY SECRET");
        std::process::exit(2);
    };
    let Some(s3) = shared::config::s3_from_env() else {
        eprintln!("s3_server: SANDBOX_S3_BUCKET is not set");
        std::process::exit(2);
    };
    let mut config = shared::config::Config::new(data_dir, Some(admin_key.clone()));
    config.s3 = Some(s3);
    config.token_secret = Some(secret.clone());
    let state = match tokio::task::spawn_blocking(move || shared::web::AppState::new(config)).await
    {
        Ok(Ok(state)) => state,
        Ok(Err(e)) => {
            eprintln!("s3_server: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("s3_server: {e}");
            std::process::exit(1);
        }
    };
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("s3_server: bind: {e}");
            std::process::exit(1);
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("s3_server: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening http://{addr}");
    let _ = out.flush();
    if let Err(e) = axum::serve(listener, sandbox::app(state)).await {
        eprintln!("s3_server: {e}");
        std::process::exit(1);
    }
}
