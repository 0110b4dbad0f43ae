-- Collector and ledger runs that progress with the tenant clock (billing policy `runs`
-- WITH_CLOCK, shared/src/domain/run_progress.rs): the instant, by the tenant clock, of the
-- run's next step (NOT_STARTED -> RUNNING, then RUNNING -> COMPLETE or ERROR). NULL once the
-- run has ended, and for every run that finished in the POST that started it (AT_ONCE).
--
-- Nullable columns only: log entries of the schema before replay unchanged on this one.
ALTER TABLE gl_runs ADD COLUMN next_step_at TEXT;
ALTER TABLE collector_runs ADD COLUMN next_step_at TEXT;
-- The clock asks for the steps due by an instant on every advance and, for a clock that runs
-- on its own, on Surface C's reads: only the few runs under way are indexed.
CREATE INDEX gl_runs_next_step ON gl_runs(next_step_at) WHERE next_step_at IS NOT NULL;
CREATE INDEX collector_runs_next_step ON collector_runs(next_step_at)
    WHERE next_step_at IS NOT NULL;
