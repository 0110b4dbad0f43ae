//! The `sandbox` command line beside `serve`: tenants, checkpoints, the test clock, fault
//! rules, the request journal, the billing policy, sample Lambda events and a usage load generator, all through
//! the public HTTP APIs (the admin API with `X-Admin-Key`, Surface B with the tenant's API
//! key), so it works the same against the local server and a deployed sandbox.
//!
//! Invariants: stdout carries only the answer (a table, `--json`, or `export` lines), every
//! message goes to stderr; a failure never panics and ends with the exit code of its kind
//! ([`client::Exit`], listed in [`EXIT_CODES`]).

mod client;
mod commands;
mod events;
mod fixtures;
mod load;
mod output;
mod policy;
mod shapes;

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// The exit codes, as `sandbox --help` prints them.
pub const EXIT_CODES: &str = "Exit codes (every command but serve):
  0  done
  1  other failure (a server error, an answer that is not the sandbox's: not JSON, another
     shape, a redirect, too long, full pages without end; a local file)
  2  usage: a wrong command line (clap's message, or a value such as --url or --from)
  3  the URL did not answer (it is named)
  4  the admin key (or the tenant's API key) is missing or refused (401)
  5  unknown tenant, checkpoint or fault rule (404)
  6  the server refused the input (400, 409, 413, 415; its message is printed)";

/// Where the sandbox is and how to talk to it (every client command takes these).
#[derive(Args, Debug, Clone)]
pub struct Conn {
    /// Base URL of the sandbox: the local server or a deployed API's URL.
    #[arg(
        long,
        global = true,
        env = "SANDBOX_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub url: String,
    /// The admin API key (X-Admin-Key), as `sandbox serve` printed or was given it.
    #[arg(long, global = true, env = "SANDBOX_ADMIN_KEY", hide_env_values = true)]
    pub admin_key: Option<String>,
    /// Print the answer as JSON (for scripts) instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The seed data of a new or reset tenant.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum SeedArg {
    /// The demo data set (accounts, services, invoices, ledgers).
    Demo,
    /// No data.
    Empty,
}

impl SeedArg {
    fn as_str(self) -> &'static str {
        match self {
            SeedArg::Demo => "demo",
            SeedArg::Empty => "empty",
        }
    }
}

/// The client commands (everything but `serve`).
#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Create, list, show, reset and delete tenants; issue bearer tokens.
    Tenant {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Checkpoints of a tenant: create, list, restore, delete.
    Checkpoint {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: CheckpointCommand,
    },
    /// A tenant's test clock: show, freeze, advance (running the transitions due), undo the
    /// last advances, real.
    Clock {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: ClockCommand,
    },
    /// A tenant's fault rules: add, list, remove.
    Fault {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: FaultCommand,
    },
    /// A tenant's request journal, one line per request, newest last.
    Requests {
        #[command(flatten)]
        conn: Conn,
        /// Tenant id or name.
        tenant: String,
        /// Keep polling (every --interval-ms) and print new requests until Ctrl-C.
        #[arg(long)]
        follow: bool,
        /// Only this status (`503`) or class (`5xx`).
        #[arg(long)]
        status: Option<String>,
        /// Only paths matching this glob (`/billing/2/*`).
        #[arg(long)]
        path: Option<String>,
        /// Only this method.
        #[arg(long)]
        method: Option<String>,
        /// How many of the newest requests to print first (1..100).
        #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Poll interval of --follow, in milliseconds.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60000))]
        interval_ms: u64,
    },
    /// Fixtures documents (docs/fixtures.md): export a tenant's data as one, apply one to a
    /// tenant (or rehearse it with --dry-run).
    Fixtures {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: FixturesCommand,
    },
    /// A tenant's billing policy: show it, set members of it (recurring timing, proration,
    /// payment terms, usage tiers, the default agreement period, runs, autopay retries).
    Policy {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Write the sample Lambda events of events/ with a tenant's real credentials, so
    /// `cargo lambda invoke` and `sam local invoke` work at once.
    ///
    /// The placeholders REPLACE_WITH_API_KEY, REPLACE_WITH_BASIC and REPLACE_WITH_TENANT_ID
    /// become the tenant's API key, base64 of its Basic `username:password` and its id; the
    /// admin events' key becomes --admin-key when given. The admin API never answers a
    /// tenant's secrets after creation, so they come from --api-key / SANDBOX_API_KEY and
    /// --basic / SANDBOX_BASIC (what `tenant create --env` prints).
    Events {
        #[command(flatten)]
        conn: Conn,
        /// Tenant id or name (resolved through the admin API when an admin key is given).
        #[arg(env = "SANDBOX_TENANT")]
        tenant: String,
        /// Directory of the sample events.
        #[arg(long, default_value = "events")]
        dir: PathBuf,
        /// Where to write them (default: <dir>/local, ignored by git).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The tenant's API key.
        #[arg(long, env = "SANDBOX_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
        /// The tenant's Basic credentials, `username:password`.
        #[arg(long, env = "SANDBOX_BASIC", hide_env_values = true)]
        basic: Option<String>,
    },
    /// Post generated usage events through Surface B (POST /billing/2/usage-events/bulk)
    /// with the tenant's API key, and print what was rated, events/s and latencies.
    ///
    /// SRIDs and units: unless --srids gives them, the tenant's ACTIVE agreement services
    /// (GET /billing/2/agreement-services) are probed with every unit of --uoms through
    /// /usage-events/simulate/bulk (which stores nothing); the pairs that rate are used in
    /// turn. Start times are spread over the 30 days before the tenant's clock (read
    /// through the admin API when a key is given, else real time). Every event of a run
    /// carries one reference_id (printed), sequence ids 1..N.
    LoadUsage {
        #[command(flatten)]
        conn: Conn,
        /// Tenant id or name.
        #[arg(long, env = "SANDBOX_TENANT")]
        tenant: String,
        /// How many events to post.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        events: u64,
        /// Target rate in events per second (default: as fast as --concurrency allows).
        #[arg(long)]
        rate: Option<f64>,
        /// Events per request (1..50, the bulk call's bound).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=50))]
        batch: u32,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
        concurrency: u32,
        /// SRIDs to post to, comma-separated, each `SRID` (units probed) or `SRID=UOM`.
        #[arg(long, value_delimiter = ',')]
        srids: Vec<String>,
        /// Units tried on each SRID when probing.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "HOUR,MINUTE,GIGABYTE,KILOWATTS_PER_HOUR,CURRENCY,COUNT"
        )]
        uoms: Vec<String>,
        /// The tenant's API key (the admin API never answers it after creation).
        #[arg(long, env = "SANDBOX_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant (its credentials are shown once). With --env, print `export` lines
    /// for a shell or CI job to eval: SANDBOX_URL, SANDBOX_TENANT, SANDBOX_API_KEY,
    /// SANDBOX_BASIC (`username:password`).
    Create {
        /// Tenant name: 1..64 of A-Z a-z 0-9 - _ . (also its Basic username).
        name: String,
        /// Seed data (default demo).
        #[arg(long, value_enum, conflicts_with = "from")]
        seed: Option<SeedArg>,
        /// IANA time zone (default UTC).
        #[arg(long, conflicts_with = "from")]
        time_zone: Option<String>,
        /// Fork: start from a checkpoint of another tenant, `TENANT:CHECKPOINT` (tenant by
        /// id or name).
        #[arg(long, value_name = "TENANT:CHECKPOINT")]
        from: Option<String>,
        /// Create the tenant from a fixtures document (docs/fixtures.md) instead of a seed.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["seed", "from"])]
        fixtures: Option<PathBuf>,
        /// Freeze the tenant's clock at INSTANT (a date or an RFC 3339 date-time; a date is
        /// midnight in the tenant's zone) before its data is written: relative dates of the
        /// seed or fixtures resolve against it, and its records are stamped by it.
        #[arg(long, value_name = "INSTANT", conflicts_with = "from")]
        clock: Option<String>,
        /// Validate and print what the creation would write, creating nothing.
        #[arg(long, conflicts_with_all = ["from", "env"])]
        dry_run: bool,
        /// Print `export` lines (shell-quoted) instead of a table.
        #[arg(long, conflicts_with = "json")]
        env: bool,
    },
    /// List the tenants (oldest first).
    List,
    /// Show one tenant (by id or name).
    Show { tenant: String },
    /// Replace all of a tenant's data by a seed (credentials kept).
    Reset {
        tenant: String,
        #[arg(long, value_enum, default_value = "demo")]
        seed: SeedArg,
    },
    /// Delete a tenant: data and credentials gone.
    Delete { tenant: String },
    /// Issue a bearer token (Surface B's `Authorization: Bearer`).
    Token {
        tenant: String,
        /// Lifetime in seconds (1..2592000).
        #[arg(long, default_value_t = 3600)]
        ttl_seconds: i64,
    },
}

#[derive(Subcommand, Debug)]
pub enum CheckpointCommand {
    /// Checkpoint a tenant's data under NAME.
    Create { tenant: String, name: String },
    /// List a tenant's checkpoints (oldest first).
    List { tenant: String },
    /// Replace a tenant's data by checkpoint NAME (credentials kept).
    Restore { tenant: String, name: String },
    /// Delete checkpoint NAME (restores and forks made from it keep their data).
    Delete { tenant: String, name: String },
}

#[derive(Subcommand, Debug)]
pub enum ClockCommand {
    /// Show the clock: mode (real, frozen, offset) and what it reads now.
    Show { tenant: String },
    /// Freeze the clock at INSTANT (a date or an RFC 3339 date-time; a date is midnight in
    /// the tenant's zone), or where it reads now when INSTANT is left out. No transitions run.
    Freeze {
        tenant: String,
        instant: Option<String>,
    },
    /// Move the clock forward by DURATION and run the transitions due on the way.
    ///
    /// DURATION is a number and a unit: s, m (minutes), h, d, w are sent as seconds;
    /// M (months) and y (years) as the date-time `to` = the clock's current reading plus
    /// that many calendar months, same wall time and UTC offset (end of month clamped:
    /// Jan 31 + 1M = Feb 28/29).
    Advance {
        tenant: String,
        #[arg(value_parser = commands::parse_advance)]
        duration: commands::Advance,
    },
    /// Back to real time (no transitions run).
    Real { tenant: String },
    /// Undo the newest advance: the tenant's data and clock become what they were just
    /// before it (writes made since go too; ids are never given out again). Each advance
    /// keeps its own automatic checkpoint for this, the last three, so up to three advances
    /// can be undone, newest first; with none left the server refuses (409, exit code 6).
    Undo { tenant: String },
}

#[derive(Subcommand, Debug)]
pub enum FaultCommand {
    /// Add a rule: matching requests answer --status (in the surface's error shape) after
    /// --latency-ms. A status, a latency or both.
    Add {
        tenant: String,
        /// Path glob, e.g. `/billing/2/usage-events/*`.
        #[arg(long)]
        path: String,
        /// Status answered, 400-599 (absent: delay only).
        #[arg(long)]
        status: Option<u16>,
        /// HTTP method (default any).
        #[arg(long)]
        method: Option<String>,
        /// Delay before the answer, milliseconds (<= 20000).
        #[arg(long)]
        latency_ms: Option<u64>,
        /// Chance a matching request is hit, 0..1 (default 1).
        #[arg(long)]
        probability: Option<f64>,
        /// Hits before the rule stops (default no limit).
        #[arg(long)]
        times: Option<i64>,
        /// Seed of the rule's draws (same seed, same hits).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// List the rules in the order they are tried.
    List { tenant: String },
    /// Remove rule RULE (an id from `fault list`), or every rule with `all`.
    Remove { tenant: String, rule: String },
}

#[derive(Subcommand, Debug)]
pub enum FixturesCommand {
    /// Print a tenant's data as a fixtures document (JSON; ids included, dates absolute), which
    /// `tenant create --fixtures` and `fixtures apply` read back.
    Export { tenant: String },
    /// Apply a fixtures document to a tenant in one write (records whose id exists are updated,
    /// the others created, nothing deleted; all or nothing).
    Apply {
        tenant: String,
        file: PathBuf,
        /// Validate and print what would be created and updated, changing nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Print the tenant's billing policy, every member (defaults included).
    Show { tenant: String },
    /// Set members of the policy, each `key=value` (e.g. `proration=NONE`,
    /// `payment_term_days=15`, `autopay_retry_days=1,3,7`; `autopay_retry_days=` for none);
    /// the others keep their value. Prints the policy now in force.
    Set {
        tenant: String,
        /// The members to set, `key=value` each.
        #[arg(required = true)]
        values: Vec<String>,
    },
}

/// Runs a client command and answers the process's exit code (its failure printed).
pub async fn run(command: ClientCommand) -> u8 {
    match commands::dispatch(command).await {
        Ok(()) => 0,
        Err(failure) => {
            // Messages quote servers: cleaned where they do, and once more here.
            eprintln!("sandbox: {}", output::clean_message(&failure.message));
            failure.exit as u8
        }
    }
}
