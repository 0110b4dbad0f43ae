-- usage_events' id sequence stands first in sqlite_sequence.
--
-- Every execution of an INSERT into an AUTOINCREMENT table reads the table's row of
-- sqlite_sequence by scanning that table from its first row until the name matches, and
-- writes the row back. 0011 gave AUTOINCREMENT to 40 tables, rebuilt in alphabetical order,
-- so usage_events' row came 38th: posting, which inserts one row per event, compared 38
-- names per event (a bulk of 50 events took 17% longer than before 0011, docs/benchmarks.md).
-- Moved below the lowest rowid, it is the first row read: one comparison per event.
--
-- The order is kept: VACUUM INTO (snapshots) copies rows in rowid order, a reset
-- (store/sqlite.rs, `clear_all`) makes the row again first, and a restore raises rows in
-- place. Nothing else changes: the sequence's value is the same, and log entries of schema
-- 18 replay unchanged on 19.

INSERT INTO sqlite_sequence (name, seq)
    SELECT 'usage_events', coalesce((SELECT max(id) FROM usage_events), 0)
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'usage_events');
UPDATE sqlite_sequence SET rowid = (SELECT min(rowid) FROM sqlite_sequence) - 1
    WHERE name = 'usage_events'
      AND rowid > (SELECT min(rowid) FROM sqlite_sequence);
