//! The simulation's tests: the invariants over many seeds, the exact replay of a seed, and
//! a deliberately wrong protocol caught within the default seeds.

use super::*;

/// `SIM_SEED=<n>`: that seed only; otherwise seeds 1 to `SIM_SEEDS` (default
/// [`DEFAULT_SEEDS`]).
fn seeds() -> Vec<u64> {
    let number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    if let Some(seed) = number("SIM_SEED") {
        return vec![seed];
    }
    (1..=number("SIM_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect()
}

#[test]
fn simulation_keeps_the_invariants_of_docs_storage_md() {
    let started = std::time::Instant::now();
    let seeds = seeds();
    let mut total = Stats::default();
    for &seed in &seeds {
        match run_seed(seed, None) {
            Ok(s) => {
                total.ops += s.ops;
                total.requests += s.requests;
                total.crashes += s.crashes;
                total.acked += s.acked;
                total.nothing += s.nothing;
                total.unknown += s.unknown;
                total.checks += s.checks;
            }
            Err(e) => panic!(
                "SIM_SEED={seed} broke an invariant: {e}\nreplay it: SIM_SEED={seed} cargo test -p shared --lib store::simulation"
            ),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "simulation: {} seeds in {secs:.1} s ({:.0} seeds/s): {total:?}",
        seeds.len(),
        seeds.len() as f64 / secs
    );
    // The faults must have been exercised, or the test proves nothing.
    if seeds.len() >= 50 {
        assert!(
            total.crashes > 0 && total.nothing > 0 && total.unknown > 0,
            "{total:?}"
        );
    }
}

#[test]
fn a_seed_replays_exactly() {
    let seed = seeds()[0];
    let (first, a) = trace_of(seed);
    let (second, b) = trace_of(seed);
    assert_eq!(first, second, "SIM_SEED={seed} ran differently twice");
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn a_lost_fence_answered_as_nothing_applied_is_caught() {
    for seed in 1..=DEFAULT_SEEDS {
        if let Err(e) = run_seed(seed, Some(Mutation::NothingAppliedWhenFenceLost)) {
            eprintln!("mutation caught by SIM_SEED={seed}: {e}");
            return;
        }
    }
    panic!("the wrong protocol passed {DEFAULT_SEEDS} seeds");
}
