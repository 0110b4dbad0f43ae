-- The result of a keyed write, carried by the write itself: the value its transaction
-- answered (JSON), stored on the key's row by that same transaction, so the row and the
-- result land in one log entry or not at all. Any process that finds the row without an
-- answer renders the answer from it (the request runs again with its write answered by this
-- result, nothing applied twice) and records it; the column is cleared once the answer is.
-- See docs/storage.md, "Idempotency keys". Tenant databases only: the registry's keys are
-- its own table version.
--
-- A nullable column only: log entries written before it replay unchanged.
ALTER TABLE idempotency_keys ADD COLUMN result TEXT;
