-- Usage events: what the foundation schema lacks for posting and reading usage.

-- When an overwrite voided the event: the revenue collectors reverse charges they already
-- collected from events voided inside their fetch window.
ALTER TABLE usage_events ADD COLUMN voided_at TEXT;

-- At most one live event per (reference_id, sequence_id): the rule posting enforces, kept by
-- the database too.
CREATE UNIQUE INDEX usage_events_live_pair ON usage_events(reference_id, sequence_id)
    WHERE voided = 0 AND reference_id IS NOT NULL AND sequence_id IS NOT NULL;

-- Reading events back: charges by event, events by the list's narrowing parameters.
CREATE INDEX usage_event_charges_event ON usage_event_charges(usage_event_id);
CREATE INDEX usage_events_account ON usage_events(billing_account_id);
CREATE INDEX usage_events_period ON usage_events(service_period_id);
CREATE INDEX service_periods_service ON service_periods(service_id, start_date);
