-- The sandbox's own state of a tenant: its test clock and its fault rules. They
-- live in the tenant database so that they replicate with the tenant (every environment on
-- one bucket sees the same clock and rules at its next request), and a reset clears them
-- with the data (the clock returns to real time, the rules are gone).

-- At most one row (id 1); no row is the real clock. A frozen clock reads `frozen_at`; a
-- running one reads real time plus `offset_ms` (a real clock advanced by N seconds).
CREATE TABLE sandbox_clock (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    frozen_at   TEXT,
    offset_ms   INTEGER NOT NULL DEFAULT 0,
    updated_at  TEXT NOT NULL
);

-- Fault rules, tried in creation order (rowid). `remaining` counts down the hits left
-- (NULL: no limit); a rule at 0 no longer fires. No status: the rule only delays.
CREATE TABLE sandbox_faults (
    id           INTEGER PRIMARY KEY,
    rule_id      TEXT NOT NULL UNIQUE,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    status       INTEGER,
    latency_ms   INTEGER NOT NULL DEFAULT 0,
    probability  REAL NOT NULL DEFAULT 1.0,
    times        INTEGER,
    remaining    INTEGER,
    seed         INTEGER NOT NULL,
    created_at   TEXT NOT NULL
);
