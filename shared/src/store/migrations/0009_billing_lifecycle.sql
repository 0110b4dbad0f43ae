-- The billing lifecycle on the tenant clock (domain/billing). What a bill run needs
-- to bill everything exactly once:
-- - usage_events.invoice_id: the invoice that billed the event's charge (NULL: still
--   pending). A run bills the events of its closed period and leaves later ones pending; a
--   canceled invoice gives its events back.
-- - services.one_time_billed_at: when the service's ONE_TIME prices were billed (once).
-- - billing_accounts.billed_through: the instant up to which recurring prices are billed
--   (NULL: never billed by the sandbox; the first run bills the period it closes).
-- - bill_batches.bill_cycle_id: the batch that holds the runs of a bill cycle.
ALTER TABLE usage_events ADD COLUMN invoice_id INTEGER;
ALTER TABLE services ADD COLUMN one_time_billed_at TEXT;
ALTER TABLE billing_accounts ADD COLUMN billed_through TEXT;
ALTER TABLE bill_batches ADD COLUMN bill_cycle_id INTEGER REFERENCES bill_cycles(id);
CREATE INDEX billing_accounts_bill_cycle ON billing_accounts(bill_cycle_id);
-- (No index on invoice_id: posting pays for every index; a cancel finds its events through
-- usage_events_account.)
