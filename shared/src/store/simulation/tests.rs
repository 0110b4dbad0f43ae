//! The simulation's tests: the invariants over many seeds, the exact replay of a seed, and
//! a deliberately wrong protocol caught within the default seeds.

use super::*;

/// A number from the environment variable `name`.
fn number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Seeds without `SIM_SEEDS` when `SIM_SECONDS` bounds the run by time instead.
const SEEDS_FOR_A_TIME: u64 = 1_000_000;

/// `SIM_SEED=<n>`: that seed only; otherwise seeds 1 to `SIM_SEEDS` (default
/// [`DEFAULT_SEEDS`], or as many as `SIM_SECONDS` allows).
fn seeds() -> Vec<u64> {
    if let Some(seed) = number("SIM_SEED") {
        return vec![seed];
    }
    let default = match number("SIM_SECONDS") {
        Some(_) => SEEDS_FOR_A_TIME,
        None => DEFAULT_SEEDS,
    };
    (1..=number("SIM_SEEDS").unwrap_or(default)).collect()
}

/// `SIM_SECONDS=<n>`: when the run stops taking new seeds (a nightly run's budget).
fn until() -> Option<std::time::Instant> {
    number("SIM_SECONDS").map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s))
}

fn trace_asked() -> bool {
    std::env::var_os("SIM_TRACE").is_some()
}

/// Runs `seeds` on a few threads (seeds are independent; each is deterministic on its own):
/// the summed counts, or the failures, smallest seed first.
fn run_all(
    seeds: &[u64],
    tables: Tables,
    mutation: Option<Mutation>,
    stop_at_first: bool,
    until: Option<std::time::Instant>,
) -> (Stats, Vec<(u64, String)>) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let total = std::sync::Mutex::new((Stats::default(), Vec::new()));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let late = until.is_some_and(|t| std::time::Instant::now() >= t);
                if i >= seeds.len() || stop.load(Ordering::SeqCst) || late {
                    return;
                }
                let seed = seeds[i];
                let out = run_seed(seed, tables, mutation);
                // `SIM_TRACE=1`: each seed's requests and trace hash, to compare two runs.
                if let Some(s) = out.as_ref().ok().filter(|_| trace_asked()) {
                    eprintln!(
                        "SIM_SEED={seed} requests={} trace={:016x}",
                        s.requests,
                        LAST_TRACE.with(std::cell::Cell::get)
                    );
                }
                let mut total = lock(&total);
                match out {
                    Ok(s) => {
                        let t = &mut total.0;
                        t.seeds += 1;
                        t.ops += s.ops;
                        t.requests += s.requests;
                        t.crashes += s.crashes;
                        t.acked += s.acked;
                        t.nothing += s.nothing;
                        t.unknown += s.unknown;
                        t.checks += s.checks;
                    }
                    Err(e) => {
                        total.1.push((seed, e));
                        if stop_at_first {
                            stop.store(true, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    let (stats, mut failures) = total.into_inner().unwrap_or_else(|p| p.into_inner());
    failures.sort_by_key(|(seed, _)| *seed);
    (stats, failures)
}

/// Runs `seeds` on `tables`, fails with the first broken invariant, and checks that the
/// faults were exercised.
fn keeps_the_invariants(seeds: &[u64], tables: Tables) {
    let started = std::time::Instant::now();
    let (total, failures) = run_all(seeds, tables, None, false, until());
    if let Some((seed, e)) = failures.first() {
        let all: Vec<u64> = failures.iter().map(|(s, _)| *s).collect();
        panic!(
            "SIM_SEED={seed} broke an invariant ({tables:?} tables): {e}\nfailing seeds: {all:?}\nreplay it: SIM_SEED={seed} cargo test -p shared --lib store::simulation"
        );
    }
    let secs = started.elapsed().as_secs_f64();
    // Seeds run (`SIM_SECONDS` may stop the run before the last).
    let ran = total.seeds;
    eprintln!(
        "simulation ({tables:?} tables): {ran} seeds in {secs:.1} s ({:.1} seeds/s): {total:?}",
        ran as f64 / secs
    );
    assert!(ran > 0, "no seed ran");
    // The faults must have been exercised, or the test proves nothing.
    if ran >= 50 {
        assert!(
            total.crashes > 0 && total.nothing > 0 && total.unknown > 0,
            "{total:?}"
        );
    }
}

/// `SIM_TABLES=product`: the product's schema for every seed (slower, see [`Tables`]).
fn tables() -> Tables {
    match std::env::var("SIM_TABLES").as_deref() {
        Ok("product") => Tables::Product,
        _ => Tables::Sim,
    }
}

#[test]
fn simulation_keeps_the_invariants_of_docs_storage_md() {
    keeps_the_invariants(&seeds(), tables());
}

/// The same seeds' first [`PRODUCT_SEEDS`] on the product's schema (a cold start there costs
/// about four times as much).
#[test]
fn simulation_keeps_them_on_the_product_schema() {
    let seeds = seeds();
    keeps_the_invariants(&seeds[..seeds.len().min(PRODUCT_SEEDS)], Tables::Product);
}

#[test]
fn a_seed_replays_exactly() {
    let seed = seeds()[0];
    let (first, a) = trace_of(seed);
    let (second, b) = trace_of(seed);
    assert_eq!(first, second, "SIM_SEED={seed} ran differently twice");
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

/// Runs the default seeds with `mutation` on: the first seed that catches it.
fn caught(mutation: Mutation) {
    let seeds: Vec<u64> = (1..=DEFAULT_SEEDS).collect();
    let (_, failures) = run_all(&seeds, Tables::Sim, Some(mutation), true, None);
    let (seed, e) = failures
        .first()
        .unwrap_or_else(|| panic!("{mutation:?} passed {DEFAULT_SEEDS} seeds"));
    eprintln!("{mutation:?} caught by SIM_SEED={seed}: {e}");
}

#[test]
fn a_lost_fence_answered_as_nothing_applied_is_caught() {
    caught(Mutation::NothingAppliedWhenFenceLost);
}

#[test]
fn a_write_that_skips_its_fence_is_caught() {
    caught(Mutation::SkipFence);
}

/// A write is one conditional PUT on the local copy, with no GET first: only because a
/// slot, once taken, is never free again. Compaction that prunes the log behind its
/// snapshot lets a stale environment take a pruned slot.
#[test]
fn a_stale_environment_taking_a_pruned_slot_is_caught() {
    caught(Mutation::PruneLog);
}

/// Group commit: a group is answered only once its one PUT has landed. Answering it
/// before (committing locally, then PUTting) acknowledges writes that a lost race or a
/// fenced slot leaves out of the log.
#[test]
fn a_group_acknowledged_before_its_put_lands_is_caught() {
    caught(Mutation::AckGroupBeforePut);
}

/// Liveness: a write that lost a race catches up before it runs again. One that does not
/// loses every race after it and is refused at its deadline, which the safety invariants
/// allow; the quiet period's writes from every environment must land.
#[test]
fn a_loser_that_never_catches_up_is_caught() {
    caught(Mutation::NoCatchUpAfterLostRace);
}

/// Group commit: every member answered as applied is in the group's entry.
#[test]
fn a_group_entry_missing_one_of_its_members_is_caught() {
    caught(Mutation::DropGroupMember);
}

/// Found by the simulation (seeds 2, 11, 222 and 350 of 400 on the code before the fix): a
/// checkpoint whose manifest PUT applied but lost its answer was answered 503 and its file
/// deleted, while the manifest stayed: a fork of it could never be read, a restore never
/// succeed.
#[test]
fn a_checkpoint_whose_manifest_answer_was_lost_stays_usable() {
    let (objects, tenant) = template(Tables::Sim).expect("template");
    let world = World::new(1, Faults::NONE);
    world.load(objects);
    let dir = scratch_dir().join(format!("sim-lost-manifest-{}", uuid::Uuid::new_v4()));
    let mut config = S3Config::new("sim", "", None);
    config.compact_every = NO_COMPACTION;
    let bucket = Bucket::on(Arc::new(world.store(0)), config);
    let store = Store::open_on_schema(&dir, Some((bucket, NO_COMPACTION)), Tables::Sim.schema())
        .expect("store");
    let db = store.tenant_db(&tenant.id).expect("tenant");
    let id = db.write_blocking(|tx| insert(tx, "before")).expect("write");
    world.lose_answer_of("checkpoints/lost.json");
    let created = store.create_checkpoint(&tenant.id, "lost");
    assert!(
        created.is_ok() || matches!(created, Err(Error::OutcomeUnknown(_))),
        "a checkpoint that exists was answered {created:?}"
    );
    let (fork, _) = store
        .fork_tenant(&tenant, "lost", "forked")
        .expect("the checkpoint exists");
    let forked = store
        .tenant_db(&fork.id)
        .and_then(|f| f.read_blocking(rows))
        .expect("the fork is readable");
    assert_eq!(forked, vec![(id, "before".to_string())]);
    store
        .restore_checkpoint(&tenant.id, "lost")
        .expect("the checkpoint restores");
    drop((db, store));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A keyed restore's key row rides in its log entry: an environment that replays the entry
/// and one cold-started from the snapshot S3 copied from the checkpoint both hold it (no
/// answer recorded yet, so a retry there learns the restore was applied instead of running
/// it again), and another request with the key is refused.
#[test]
fn a_keyed_restore_keeps_its_key_on_every_environment() {
    use crate::store::idempotency::{self, Found, KeyScope};
    let (objects, tenant) = template(Tables::Sim).expect("template");
    let world = World::new(1, Faults::NONE);
    world.load(objects);
    let root = scratch_dir().join(format!("sim-keyed-restore-{}", uuid::Uuid::new_v4()));
    let open = |env: usize| {
        let mut config = S3Config::new("sim", "", None);
        config.compact_every = NO_COMPACTION;
        let bucket = Bucket::on(Arc::new(world.store(env)), config);
        let dir = root.join(format!("env{env}"));
        Store::open_on_schema(&dir, Some((bucket, NO_COMPACTION)), Tables::Sim.schema())
            .expect("store")
    };
    let found = |store: &Store| {
        store
            .tenant_db(&tenant.id)
            .and_then(|db| db.read_blocking(|c| idempotency::lookup(c, "r-1", "fp")))
            .expect("lookup")
    };
    let (writer, replayer) = (open(0), open(1));
    let db = writer.tenant_db(&tenant.id).expect("tenant");
    db.write_blocking(|tx| insert(tx, "kept")).expect("write");
    writer
        .create_checkpoint(&tenant.id, "cp")
        .expect("checkpoint");
    assert_eq!(
        found(&replayer),
        Found::Nothing,
        "opened before the restore"
    );
    let key = KeyScope::new(&tenant.id, "r-1", "fp");
    writer
        .restore_checkpoint_keyed(&tenant.id, "cp", Some(&key))
        .expect("restore");
    assert!(key.written());
    assert_eq!(found(&writer), Found::Unrecorded, "the writer");
    assert_eq!(
        found(&replayer),
        Found::Unrecorded,
        "replayed the restore entry"
    );
    assert_eq!(
        found(&open(2)),
        Found::Unrecorded,
        "cold start from the copied snapshot"
    );
    // Another request with the key (as two environments racing with it would be): refused
    // before it claims a log slot, nothing restored.
    let other = KeyScope::new(&tenant.id, "r-1", "fp");
    let again = replayer.restore_checkpoint_keyed(&tenant.id, "cp", Some(&other));
    assert!(matches!(again, Err(Error::Conflict(_))), "{again:?}");
    assert!(!other.written());
    drop((db, writer));
    let _ = std::fs::remove_dir_all(&root);
}

/// A checkpoint made by a keyed request names its key: a retry of that request whose key's
/// row was never written (the web layer writes it after the creation) gets the checkpoint,
/// another request with the name a 409, in S3 mode as locally.
#[test]
fn a_keyed_checkpoint_creation_finds_its_own_checkpoint() {
    use crate::store::idempotency::KeyScope;
    let (objects, tenant) = template(Tables::Sim).expect("template");
    let world = World::new(1, Faults::NONE);
    world.load(objects);
    let dir = scratch_dir().join(format!("sim-keyed-checkpoint-{}", uuid::Uuid::new_v4()));
    let mut config = S3Config::new("sim", "", None);
    config.compact_every = NO_COMPACTION;
    let bucket = Bucket::on(Arc::new(world.store(0)), config);
    let store = Store::open_on_schema(&dir, Some((bucket, NO_COMPACTION)), Tables::Sim.schema())
        .expect("store");
    let key = KeyScope::new(&tenant.id, "cp-1", "fp");
    let first = store
        .create_checkpoint_keyed(&tenant.id, "cp", Some(&key))
        .expect("checkpoint");
    let retry = KeyScope::new(&tenant.id, "cp-1", "fp");
    let again = store.create_checkpoint_keyed(&tenant.id, "cp", Some(&retry));
    assert_eq!(again.ok(), Some(first));
    let other = KeyScope::new(&tenant.id, "cp-1", "another request");
    let taken = store.create_checkpoint_keyed(&tenant.id, "cp", Some(&other));
    assert!(matches!(taken, Err(Error::Conflict(_))), "{taken:?}");
    assert!(matches!(
        store.create_checkpoint(&tenant.id, "cp"),
        Err(Error::Conflict(_))
    ));
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
