-- The automatic checkpoints kept before clock advances, newest last (shared/src/sandbox/undo.rs):
-- one row per advance that can still be undone, naming the image of the tenant made just
-- before it (`undo/<ms>-<uuid>.db` under the tenant's place; shared/src/store/checkpoints/undo.rs).
-- The list lives in the tenant's data so that it travels with it: the image of an advance
-- holds the list as it was before that advance, so restoring it (an undo) drops its own row
-- in the same transaction, and a restore or a reset brings back or clears the list with the
-- rest. `version` is the tenant's version the image holds; `advanced_from`/`advanced_to` the
-- clock readings of the advance (RFC 3339); `kept_at` real time. No client sees the ids.
--
-- A new table only: log entries of schema 11 replay unchanged on 12.
CREATE TABLE sandbox_undo (
    id             INTEGER PRIMARY KEY,
    image          TEXT NOT NULL UNIQUE,
    version        INTEGER NOT NULL,
    advanced_from  TEXT NOT NULL,
    advanced_to    TEXT NOT NULL,
    kept_at        TEXT NOT NULL
);
