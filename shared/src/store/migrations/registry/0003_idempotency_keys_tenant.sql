-- The registry's idempotency keys (its version 2 is the tenant schema's table, migration
-- 0010, declared once there) also name the tenant the keyed write made or deleted, so that
-- a creation undone after its registration (its seed refused) drops its key rows with it
-- and a retry runs anew.
ALTER TABLE idempotency_keys ADD COLUMN tenant_id TEXT;
