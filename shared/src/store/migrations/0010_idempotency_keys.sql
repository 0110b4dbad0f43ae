-- Idempotency keys: a write that carried an `Idempotency-Key` header
-- leaves one row here, inserted by the write's own transaction (so it travels in the same S3
-- log entry as the data it guards), and its rendered answer, stored by a follow-up write once
-- the first is acknowledged. See docs/storage.md, "Idempotency keys".
--
-- key          the header's value (1..255 visible ASCII characters)
-- fingerprint  hex SHA-256 of method, path, query, body hash and tenant id
-- request_id   a random id of the request that inserted the row: a second write of the same
--              request finds its own row; another request finds someone else's
-- created_at   the tenant clock when the row was inserted (RFC 3339): kept 24 h by that clock
-- status, content_type, headers (JSON [[name, value], ...]), body: the answer; NULL status
--              while it is not recorded (in flight, or the first answer was lost)
CREATE TABLE idempotency_keys (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    request_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status INTEGER,
    content_type TEXT,
    headers TEXT,
    body BLOB
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at, id);
