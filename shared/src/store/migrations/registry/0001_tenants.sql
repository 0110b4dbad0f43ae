-- The registry's first tables: which tenants exist and which credentials open them.
-- IF NOT EXISTS: a registry made before the registry's schema had versions holds them
-- already (see `store::registry`, "Schema versions").
CREATE TABLE IF NOT EXISTS tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    time_zone   TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS credentials (
    tenant_id            TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    api_key_hash         TEXT NOT NULL UNIQUE,
    basic_username       TEXT NOT NULL UNIQUE,
    basic_password_hash  TEXT NOT NULL
);
-- No longer read or written (the token secret comes from the configuration); kept so that
-- older registry log entries, which inserted into it, still replay.
CREATE TABLE IF NOT EXISTS server_secrets (
    name   TEXT PRIMARY KEY,
    value  BLOB NOT NULL
);
