//! `sandbox`: the local server (all surfaces on one port, embedded SQLite, no cloud), or, when
//! started by the Lambda runtime, one Lambda function serving every route group; beside
//! `serve`, the command line of a local or deployed sandbox (`cli`: tenants, checkpoints, the
//! clock, faults, the journal, sample events, a usage load generator).

mod cli;

use clap::{Parser, Subcommand};

/// The local server allocates many small strings and vectors per request (JSON read and
/// written, rows bound and read): mimalloc serves them with less work than glibc's malloc,
/// whose malloc/free (with its consolidation passes) were 18% of the server's time posting
/// usage under wrk. The five Lambda functions keep the system allocator: their
/// time goes to S3, and their size to the 10 MB bound.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use shared::config::Config;
use shared::web::AppState;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "sandbox",
    about = "Billing platform sandbox: Surfaces A, B and C plus the admin API",
    long_about = "Billing platform sandbox: Surfaces A, B and C plus the admin API.\n\n`sandbox serve` runs the local server; the other commands talk to a running sandbox (--url / SANDBOX_URL, default http://127.0.0.1:8080) through its admin API (--admin-key / SANDBOX_ADMIN_KEY). Web console: <url>/sandbox/console.",
    after_help = cli::EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve every surface on one local port.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Directory of the registry and the tenant databases.
        #[arg(long, default_value = "./data", env = "SANDBOX_DATA_DIR")]
        data_dir: PathBuf,
        /// Admin API key; generated and printed when absent.
        #[arg(long, env = "SANDBOX_ADMIN_KEY", hide_env_values = true)]
        admin_key: Option<String>,
    },
    #[command(flatten)]
    Client(cli::ClientCommand),
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut config = Config::from_env();
    if config.lambda {
        shared::web::init_tracing(config.lambda);
        let state = AppState::new(config)?;
        return lambda_http::run(sandbox::app(state)).await;
    }
    let (listen, data_dir, admin_key) = match Cli::parse().command {
        Command::Serve {
            listen,
            data_dir,
            admin_key,
        } => (listen, data_dir, admin_key),
        // The client commands log nothing: their stdout is an answer a script reads.
        Command::Client(command) => std::process::exit(i32::from(cli::run(command).await)),
    };
    shared::web::init_tracing(config.lambda);
    let admin_key = admin_key
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| format!("adm_{}", hex_token()));
    config.data_dir = data_dir;
    config.admin_key = Some(admin_key.clone());
    let state = AppState::new(config)?;
    let demo = sandbox::ensure_demo_tenant(&state).await?;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let base = format!("http://{}", listener.local_addr()?);
    say(&sandbox::banner(&base, &admin_key, demo.as_ref()));
    let limits = sandbox::server::Limits::of(&state.config);
    sandbox::server::serve(listener, sandbox::app(state), limits, shutdown_signal()).await;
    say("sandbox stopped");
    Ok(())
}

/// Prints a line to stdout; a closed stdout (a pipe whose reader left) is not an error.
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn hex_token() -> String {
    shared::auth::random_bytes(16)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
