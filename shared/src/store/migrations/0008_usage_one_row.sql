-- Usage posting speed, second step: a rated event is one row.
--
-- Posting stored two rows per event (the event and its one charge), and the event's four
-- foreign keys plus the charge's three were probed on every insert. Measured with the real
-- pragmas (50 events per transaction, against plain rows): two rows with foreign keys 0.16-0.17
-- of the plain rate, one row with the same four indexes and no foreign keys 0.25-0.26.
--
-- 1. usage_events is rebuilt without REFERENCES clauses (same name, same columns, rows copied
--    with their ids; the 0005 procedure, foreign keys off while it runs). Posting resolves
--    every reference itself from the rows it just read (service resource, agreement service,
--    billing account, service period) inside the same write transaction, and nothing deletes
--    those parents, so the probes checked what was already known.
-- 2. The event carries its charge: usage_rule_id, charge_category_id, charge_rate,
--    charge_usage_uom and charge_usage_amount (the charge itself is total_charge: a rated
--    event has exactly one charge, the rater makes one). New columns are nullable, so entries
--    of schema 7 replay unchanged (docs/storage.md, "Schema versions").
-- 3. usage_event_charges stays, unchanged: it holds the charges of events posted before this
--    migration (and of schema-7 log entries replayed after it). Readers read the view
--    usage_charges, which is both: the old rows, and one row per event that carries its
--    charge, numbered by the event's id. Posting always numbered the two tables in lockstep
--    (one event row, then its one charge row, both max + 1, in one transaction; nothing else
--    wrote either), so a charge's id was its event's id before, and stays so.
CREATE TABLE usage_events__new (
    id                           INTEGER PRIMARY KEY,
    request_id                   TEXT NOT NULL,
    service_resource_identifier  TEXT NOT NULL,
    service_resource_id          INTEGER,
    agreement_service_id         INTEGER,
    billing_account_id           INTEGER,
    service_period_id            INTEGER,
    start_time                   TEXT NOT NULL,
    end_time                     TEXT NOT NULL,
    usage_uom                    TEXT NOT NULL,
    usage_amount                 TEXT NOT NULL COLLATE DECIMAL,
    reference_id                 TEXT,
    sequence_id                  TEXT,
    total_charge                 TEXT NOT NULL COLLATE DECIMAL,
    overwrite_counter            INTEGER NOT NULL DEFAULT 0,
    voided                       INTEGER NOT NULL DEFAULT 0,
    created_at                   TEXT NOT NULL,
    voided_at                    TEXT,
    usage_rule_id                INTEGER,
    charge_category_id           INTEGER,
    charge_rate                  TEXT,
    charge_usage_uom             TEXT,
    charge_usage_amount          TEXT COLLATE DECIMAL
);
INSERT INTO usage_events__new (id, request_id, service_resource_identifier,
        service_resource_id, agreement_service_id, billing_account_id, service_period_id,
        start_time, end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge,
        overwrite_counter, voided, created_at, voided_at)
    SELECT id, request_id, service_resource_identifier, service_resource_id,
        agreement_service_id, billing_account_id, service_period_id, start_time, end_time,
        usage_uom, usage_amount, reference_id, sequence_id, total_charge, overwrite_counter,
        voided, created_at, voided_at
    FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events__new RENAME TO usage_events;
-- The indexes of 0001, 0003 and 0007, made again (the lists' narrowing parameters:
-- reference_id through the pair, request_id, billing_account_id, service_period_id).
CREATE UNIQUE INDEX usage_events_pair ON usage_events(
    reference_id, sequence_id, (CASE WHEN voided = 0 THEN 0 ELSE id END));
CREATE INDEX usage_events_request ON usage_events(request_id);
CREATE INDEX usage_events_account ON usage_events(billing_account_id);
CREATE INDEX usage_events_period ON usage_events(service_period_id);

CREATE VIEW usage_charges AS
    SELECT id, usage_event_id, usage_rule_id, charge_category_id, charge, rate, usage_uom,
        usage_amount
    FROM usage_event_charges
    UNION ALL
    SELECT id, id, usage_rule_id, charge_category_id, total_charge, charge_rate,
        charge_usage_uom, charge_usage_amount
    FROM usage_events
    WHERE usage_rule_id IS NOT NULL;
