//! The deterministic simulation of the S3 protocol (docs/storage.md, "Simulation"): several
//! environments (each a whole [`Store`] with its own cache directory, as separate processes
//! would be) share one tenant in the in-memory bucket of [`World`], whose seeded scheduler
//! delays, drops, fails, holds and reorders requests and crashes environments mid-operation.
//! Each seed runs a random sequence of real store operations (ledger rows written and
//! deleted through the replicated write path, keyed writes with idempotency keys, reads,
//! checkpoints, plain and keyed restores, forks, fork deletions, compactions), then a quiet
//! period, and checks the invariants docs/storage.md promises:
//! - every acknowledged write is there exactly once, with the id it was acknowledged with
//!   (until an acknowledged delete or restore removes it), in every read that began after
//!   its acknowledgement, on every environment;
//! - a write answered "nothing applied" (503 Unavailable, 409) is never seen;
//! - an id is never given to two rows, restores included;
//! - at most one write per idempotency key is ever applied, and a replayed answer is the
//!   first answer; a keyed restore answered as applied is never run again;
//! - forks hold their checkpoint's rows; a deleted fork is not found anywhere;
//! - after the quiet period every environment, and a new one cold-started from the bucket,
//!   reads the same rows, which match the model, and holds the same idempotency keys;
//! - liveness: then a write from each of them in turn, each on a copy the one before made
//!   stale, is acknowledged (the invariants above allow "nothing was applied" at any time,
//!   so a protocol whose losers never land would otherwise pass).
//!
//! It lives in the shared crate's unit tests rather than in the e2e crate because the
//! deliberately wrong protocol it must catch ([`Mutation`]) is compiled in only under
//! `cfg(test)` (never in a build that serves), and because a change to the store then
//! rebuilds one crate, not the whole server. `SIM_SEED=<n>` replays one seed,
//! `SIM_SEEDS=<n>` runs more seeds than the default, `SIM_SECONDS=<n>` as many as fit in
//! that time, `SIM_TABLES=product` runs them on the product's schema instead of the
//! simulation's three tables (see [`Tables`]).

mod model;
mod ops;
mod quiet;

use super::memory::{Crash, Faults, World};
use super::s3::{Bucket, Mutation, S3Config};
use super::{lock, SlotState, Store, TenantDb, TenantRecord, TenantSchema};
use crate::{Error, Result};
use model::{Model, Outcome};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Environments sharing the tenant.
const ENVS: usize = 3;
/// Operations per seed before the quiet period.
const OPS: usize = 40;
/// Seeds run by default (`SIM_SEEDS` to change): about 7 s in a debug build on this
/// project's 2-core machine.
const DEFAULT_SEEDS: u64 = 300;
/// Of those, the seeds also run on the product's schema ([`Tables::Product`]).
const PRODUCT_SEEDS: usize = 12;
/// No background compaction: it would run on a thread of its own, outside the scheduler's
/// order; the simulation compacts as one of its operations instead.
const NO_COMPACTION: u64 = 1 << 40;

/// The faults of a run (per 1,000 requests; crashes per request of an operation allowed to
/// crash, about one operation in seven).
const FAULTS: Faults = Faults {
    drop: 30,
    fail_after: 25,
    hold: 30,
    slow: 15,
    crash: 40,
    land: 150,
};

/// The tables a seed's tenant holds.
///
/// Most seeds run on [`Tables::Sim`]: the one product table the simulation writes
/// (`ledgers`, cut to the columns it uses, ids never reused as in the product), the tenant
/// clock idempotency keys are kept by, and the product's own idempotency-key table. The
/// protocol never reads table names (capture covers whatever tables there are), so the small
/// schema runs the same code, while a cold start parses three tables instead of the
/// product's schema, which was most of a seed's time (docs/storage.md, "Speed"). A smaller
/// tier of seeds runs on [`Tables::Product`], the schema every deployment serves, so that
/// snapshots, restores and forks of the real schema (its foreign keys, its `AUTOINCREMENT`
/// sequences, its many tables) stay under the simulation too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tables {
    Sim,
    Product,
}

impl Tables {
    fn schema(self) -> TenantSchema {
        match self {
            Tables::Sim => sim_schema,
            Tables::Product => super::sqlite::migrate,
        }
    }
}

/// [`Tables::Sim`]'s schema, created in one transaction on an empty database.
fn sim_schema(conn: &mut rusqlite::Connection) -> Result<()> {
    super::sqlite::exclusively(conn, |tx| {
        let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version == 0 {
            tx.execute_batch(concat!(
                "CREATE TABLE ledgers (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);
                 CREATE TABLE sandbox_clock (
                     id INTEGER PRIMARY KEY CHECK (id = 1), frozen_at TEXT,
                     offset_ms INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL);",
                include_str!("../migrations/0010_idempotency_keys.sql"),
                "PRAGMA user_version = 1;"
            ))?;
        }
        Ok(())
    })
}

/// A ledger row's id, as the write that made it answers.
fn insert(tx: &rusqlite::Transaction<'_>, name: &str) -> Result<i64> {
    tx.execute("INSERT INTO ledgers (name) VALUES (?1)", [name])?;
    Ok(tx.last_insert_rowid())
}

fn rows(conn: &rusqlite::Connection) -> Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare("SELECT id, name FROM ledgers ORDER BY id")?;
    let out = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(out)
}

/// Whether an answer promises that nothing was applied.
fn nothing_applied(e: &Error) -> bool {
    matches!(
        e,
        Error::Unavailable(_)
            | Error::Conflict(_)
            | Error::NotFound(_)
            | Error::BadRequest(_)
            | Error::PreconditionFailed(_)
            | Error::NewerSchema(_)
    )
}

/// What a client learned, `None` meaning the environment crashed.
fn outcome<T>(answer: Option<Result<T>>, id: impl Fn(&T) -> i64) -> Outcome {
    match answer {
        Some(Ok(v)) => Outcome::Acked(id(&v)),
        Some(Err(e)) if nothing_applied(&e) => Outcome::Nothing,
        _ => Outcome::Unknown,
    }
}

impl Store {
    /// Forgets tenants whose last open failed, as [`super::OPEN_RETRY_AFTER`] of real time
    /// would (a seed runs in milliseconds of real time).
    fn forget_failed_opens(&self) {
        lock(&self.inner.open)
            .retain(|_, slot| !matches!(&*lock(&slot.state), SlotState::Failed { .. }));
    }
}

impl TenantDb {
    /// Compacts now, on this thread (the simulation's compaction step).
    fn compact_now(&self) {
        if self.db.replica().is_some_and(|r| r.begin_compaction()) {
            self.db.compact();
        }
    }
}

/// A fork the simulation made.
struct Fork {
    id: String,
    model: Model,
    /// Its tombstone was acknowledged: not found anywhere from then on.
    deleted: bool,
    /// A deletion whose outcome is unknown: nothing is checked any more.
    unknown: bool,
}

/// An idempotency key's requests so far.
#[derive(Default)]
struct Key {
    attempts: u32,
    /// The answer (the row's id) the client got, first or replayed.
    answer: Option<i64>,
    /// The client learned the request was applied (answered, replayed or 409 "applied").
    applied: bool,
    /// A restore since: the key's row may be gone, so a retry may run again.
    restored: bool,
}

/// What a keyed attempt did.
enum KeyAttempt {
    Ran(Result<i64>),
    Replayed(i64),
    Unrecorded,
    Mismatch,
}

/// Counts of one seed, for the report.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Stats {
    pub seeds: u64,
    pub ops: u64,
    pub requests: u64,
    pub crashes: u64,
    pub acked: u64,
    pub nothing: u64,
    pub unknown: u64,
    pub checks: u64,
}

/// One seed's run.
struct Sim {
    world: Arc<World>,
    tables: Tables,
    rt: Arc<tokio::runtime::Runtime>,
    root: PathBuf,
    config: S3Config,
    envs: Vec<Option<Store>>,
    incarnation: usize,
    tenant: TenantRecord,
    model: Model,
    ids: BTreeMap<i64, String>,
    checkpoints: Vec<(String, Model)>,
    forks: Vec<Fork>,
    keys: Vec<Key>,
    restore_keys: Vec<ops::RestoreKey>,
    next: u64,
    stats: Stats,
    log: Vec<String>,
}

/// Runs one seed (with `mutation` switched on, if any): its counts, or the violated
/// invariant with the operations that led to it.
pub(super) fn run_seed(
    seed: u64,
    tables: Tables,
    mutation: Option<Mutation>,
) -> std::result::Result<Stats, String> {
    silence_crashes();
    let root = scratch_dir().join(format!(
        "sim-{}-{seed}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let world = World::new(seed, Faults::NONE);
    world.set_mutation(mutation);
    world.drive();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut config = S3Config::new("sim", "", None);
    config.compact_every = NO_COMPACTION;
    let result = (|| {
        let mut sim = Sim::start(world.clone(), Arc::new(rt), root.clone(), config, tables)?;
        let run = sim.run();
        sim.stats.requests = world.requests();
        LAST_TRACE.with(|t| t.set(world.trace()));
        match run {
            Ok(()) => Ok(sim.stats),
            Err(e) => {
                let tail = sim.log.len().saturating_sub(25);
                Err(format!(
                    "{e}\nlast operations:\n  {}",
                    sim.log[tail..].join("\n  ")
                ))
            }
        }
    })();
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// The trace hash of a seed's run (for the determinism test).
pub(super) fn trace_of(seed: u64) -> (u64, std::result::Result<Stats, String>) {
    let out = run_seed(seed, Tables::Sim, None);
    (LAST_TRACE.with(std::cell::Cell::get), out)
}

thread_local! {
    static LAST_TRACE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The bucket every seed starts from, made once per process and per [`Tables`] without
/// faults: the registry with the tenant, and the tenant's first snapshot (so that a cold start
/// downloads a migrated database instead of migrating an empty one).
type Template = (BTreeMap<String, Vec<u8>>, TenantRecord);

fn template(tables: Tables) -> std::result::Result<Template, String> {
    static SIM: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    static PRODUCT: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    let cell = match tables {
        Tables::Sim => &SIM,
        Tables::Product => &PRODUCT,
    };
    if let Some(t) = cell.get() {
        return Ok(t.clone());
    }
    let world = World::new(0, Faults::NONE);
    let dir = scratch_dir().join(format!("sim-template-{}", uuid::Uuid::new_v4()));
    let mut config = S3Config::new("sim", "", None);
    config.compact_every = NO_COMPACTION;
    let made = (|| -> Result<TenantRecord> {
        let bucket = Bucket::on(Arc::new(world.store(0)), config);
        let store = Store::open_on_schema(&dir, Some((bucket, NO_COMPACTION)), tables.schema())?;
        let (tenant, _) = store.registry().create_tenant("sim", "UTC")?;
        let db = store.tenant_db(&tenant.id)?;
        // One write, so that the snapshot has a version to name.
        db.write_blocking(|tx| insert(tx, "setup"))?;
        db.write_blocking(|tx| Ok(tx.execute("DELETE FROM ledgers", [])?))?;
        db.compact_now();
        Ok(tenant)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    let tenant = made.map_err(|e| format!("template: {e}"))?;
    Ok(cell.get_or_init(|| (world.objects(), tenant)).clone())
}

/// Where the environments' cache directories go: a RAM disk when there is one (the
/// simulation's SQLite files are thrown away; syncing them to a disk only costs time).
fn scratch_dir() -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Simulated crashes unwind with a [`Crash`] payload: kept out of the test output.
fn silence_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<Crash>().is_none() {
                default(info);
            }
        }));
    });
}

impl Sim {
    fn start(
        world: Arc<World>,
        rt: Arc<tokio::runtime::Runtime>,
        root: PathBuf,
        config: S3Config,
        tables: Tables,
    ) -> std::result::Result<Sim, String> {
        let mut sim = Sim {
            world,
            tables,
            rt,
            root,
            config,
            envs: (0..ENVS).map(|_| None).collect(),
            incarnation: 0,
            tenant: TenantRecord {
                id: String::new(),
                name: String::new(),
                time_zone: String::new(),
                created_at: String::new(),
            },
            model: Model::default(),
            ids: BTreeMap::new(),
            checkpoints: Vec::new(),
            forks: Vec::new(),
            keys: Vec::new(),
            restore_keys: Vec::new(),
            next: 0,
            stats: Stats::default(),
            log: Vec::new(),
        };
        let (objects, tenant) = template(tables)?;
        sim.world.load(objects.clone());
        sim.tenant = tenant.clone();
        for env in 0..ENVS {
            sim.boot(env)?;
        }
        sim.world.set_faults(FAULTS);
        Ok(sim)
    }

    fn env(&self, env: usize) -> Store {
        self.envs[env].clone().expect("every environment is up")
    }

    /// Starts environment `env` from the bucket, as a new process would (a cold start),
    /// trying again while the scheduler makes it fail.
    fn boot(&mut self, env: usize) -> std::result::Result<(), String> {
        self.envs[env] = None;
        for _ in 0..200 {
            self.incarnation += 1;
            let dir = self.root.join(format!("env{env}-{}", self.incarnation));
            let bucket = Bucket::on(Arc::new(self.world.store(env)), self.config.clone());
            if let Ok(store) =
                Store::open_on_schema(&dir, Some((bucket, NO_COMPACTION)), self.tables.schema())
            {
                self.envs[env] = Some(store);
                return Ok(());
            }
        }
        Err(format!("environment {env} could not start in 200 tries"))
    }

    /// Runs `f` on environment `env` (which may crash in it when `crashable`): its answer,
    /// or `None` when the environment crashed (it is then rebuilt from the bucket).
    fn on<T>(
        &mut self,
        env: usize,
        crashable: bool,
        f: impl FnOnce(&Store) -> T,
    ) -> std::result::Result<Option<T>, String> {
        let store = self.env(env);
        store.forget_failed_opens();
        if crashable {
            self.world.arm_crash(Some(env));
        }
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&store)));
        self.world.arm_crash(None);
        drop(store);
        let crashed = self.world.take_crashed().is_some();
        match out {
            Ok(v) if !crashed => Ok(Some(v)),
            Err(panic) if panic.downcast_ref::<Crash>().is_none() => Err(format!(
                "environment {env} panicked: {:?}",
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
            )),
            _ => {
                self.stats.crashes += 1;
                self.log.push(format!("  env {env} crashed; cold start"));
                self.boot(env)?;
                Ok(None)
            }
        }
    }

    fn draw(&self, low: u64, high: u64) -> u64 {
        self.world.draw(low, high)
    }

    fn pick<T>(&self, items: &[T]) -> Option<usize> {
        (!items.is_empty()).then(|| self.draw(0, items.len() as u64 - 1) as usize)
    }

    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Acked(_) => self.stats.acked += 1,
            Outcome::Nothing => self.stats.nothing += 1,
            Outcome::Unknown => self.stats.unknown += 1,
        }
    }

    fn run(&mut self) -> std::result::Result<(), String> {
        for _ in 0..OPS {
            self.step()?;
            self.stats.ops += 1;
        }
        self.quiet()
    }

    fn step(&mut self) -> std::result::Result<(), String> {
        let env = self.draw(0, ENVS as u64 - 1) as usize;
        let crashable = self.draw(0, 6) == 0;
        let tenant = self.tenant.id.clone();
        match self.draw(0, 99) {
            27..=34 => self.group_write(env, crashable)?,
            0..=26 => {
                let name = format!("w{}", self.next);
                self.next += 1;
                let answer = self.on(env, crashable, |s| {
                    s.tenant_db(&tenant)?.write_blocking(|tx| insert(tx, &name))
                })?;
                let o = outcome(answer, |id| *id);
                self.log.push(format!("env {env}: write {name} -> {o:?}"));
                self.count(o);
                self.model.wrote(&name, o);
            }
            35..=42 => {
                let present: Vec<String> = self
                    .model
                    .present()
                    .into_iter()
                    .filter(|n| n.starts_with('w'))
                    .collect();
                let Some(i) = self.pick(&present) else {
                    return Ok(());
                };
                let name = present[i].clone();
                let answer = self.on(env, crashable, |s| {
                    s.tenant_db(&tenant)?.write_blocking(|tx| {
                        Ok(tx.execute("DELETE FROM ledgers WHERE name = ?1", [&name])?)
                    })
                })?;
                let o = outcome(answer, |_| 0);
                self.log.push(format!("env {env}: delete {name} -> {o:?}"));
                self.model.deleted(&name, o);
            }
            43..=57 => self.read(env, crashable)?,
            58..=63 => {
                let name = format!("c{}", self.next);
                self.next += 1;
                let snapshot = self.model.clone();
                let answer = self.on(env, crashable, |s| s.create_checkpoint(&tenant, &name))?;
                let o = outcome(answer, |_| 0);
                self.log
                    .push(format!("env {env}: checkpoint {name} -> {o:?}"));
                // Whatever the answer, a checkpoint that exists holds the rows of now.
                self.checkpoints.push((name, snapshot));
            }
            64..=67 => self.restore(env, crashable)?,
            68..=70 => self.keyed_restore(env, crashable)?,
            71..=74 => self.fork(env, crashable)?,
            75..=77 => self.delete_fork(env, crashable)?,
            78..=82 => {
                let answer = self.on(env, crashable, |s| {
                    s.tenant_db(&tenant).map(|db| db.compact_now())
                })?;
                self.log.push(format!(
                    "env {env}: compact -> {:?}",
                    answer.map(|r| r.is_ok())
                ));
            }
            _ => self.keyed(env, crashable)?,
        }
        Ok(())
    }
}

#[cfg(test)] // (the whole module is test code; said again for the layer scanner)
mod tests;
