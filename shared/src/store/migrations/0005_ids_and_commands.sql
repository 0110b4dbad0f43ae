-- Ids a client can see are never reused after a delete, and the tables behind the
-- billing account commands addNote and billOnDemand.
--
-- SQLite hands out max(rowid) + 1, so deleting the newest row let the next insert reuse its
-- id. AUTOINCREMENT keeps the highest id ever used in sqlite_sequence instead. It can only be
-- declared when a table is created, so each table whose rows a client can delete (and whose
-- ids it sees) is rebuilt: new table, rows copied with their ids (which starts its sequence
-- at the current maximum, the highest id an existing database still knows), old table
-- dropped, new one renamed, its indexes made again. Foreign keys are off while this runs
-- (store/sqlite.rs, `migrate`): dropping a parent table must neither cascade nor fail, and
-- the references by name resolve again once the rebuilt table has its name back.

-- Surface B: DELETE agreement-services/{id}/true-up-charge-type-relations/{id}.
CREATE TABLE true_up_charge_type_relations__new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    agreement_service_id  INTEGER NOT NULL REFERENCES agreement_services(id),
    true_up_charge_type   TEXT NOT NULL,
    UNIQUE (agreement_service_id, true_up_charge_type)
);
INSERT INTO true_up_charge_type_relations__new (id, agreement_service_id, true_up_charge_type)
    SELECT id, agreement_service_id, true_up_charge_type FROM true_up_charge_type_relations;
DROP TABLE true_up_charge_type_relations;
ALTER TABLE true_up_charge_type_relations__new RENAME TO true_up_charge_type_relations;
CREATE INDEX true_up_relations_agreement_service ON true_up_charge_type_relations(agreement_service_id);

-- Surface C: DELETE ledgers/{id}.
CREATE TABLE ledgers__new (
    id                          INTEGER PRIMARY KEY AUTOINCREMENT,
    name                        TEXT NOT NULL UNIQUE,
    description                 TEXT,
    status                      TEXT NOT NULL DEFAULT 'ACTIVE',
    convert_currency            TEXT NOT NULL DEFAULT 'NONE',
    conversion_currency         TEXT,
    chart_of_account_id         INTEGER REFERENCES chart_of_accounts(id),
    rule_set_id                 INTEGER REFERENCES rule_sets(id),
    run_mode_actuals_id         INTEGER REFERENCES gl_run_modes(id),
    conversion_rate_set_id      TEXT,
    currency_exchange_version   TEXT,
    expected_customer_lifetime  INTEGER,
    create_zero_amount_entries  INTEGER NOT NULL DEFAULT 0,
    timezone_name               TEXT NOT NULL DEFAULT 'UTC'
);
INSERT INTO ledgers__new (id, name, description, status, convert_currency, conversion_currency,
        chart_of_account_id, rule_set_id, run_mode_actuals_id, conversion_rate_set_id,
        currency_exchange_version, expected_customer_lifetime, create_zero_amount_entries,
        timezone_name)
    SELECT id, name, description, status, convert_currency, conversion_currency,
        chart_of_account_id, rule_set_id, run_mode_actuals_id, conversion_rate_set_id,
        currency_exchange_version, expected_customer_lifetime, create_zero_amount_entries,
        timezone_name
    FROM ledgers;
DROP TABLE ledgers;
ALTER TABLE ledgers__new RENAME TO ledgers;

-- Surface C: a ledger's calendar, DELETE .../calendar/years/{yid} (with its periods).
CREATE TABLE calendar_nodes__new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    ledger_id    INTEGER NOT NULL REFERENCES ledgers(id) ON DELETE CASCADE,
    type         TEXT NOT NULL,          -- CALENDAR | YEAR | PERIOD
    parent_id    INTEGER REFERENCES calendar_nodes(id) ON DELETE CASCADE,
    name         TEXT,
    description  TEXT,
    quarter      INTEGER,
    start_date   TEXT,
    end_date     TEXT,
    open         INTEGER NOT NULL DEFAULT 1
);
INSERT INTO calendar_nodes__new (id, ledger_id, type, parent_id, name, description, quarter,
        start_date, end_date, open)
    SELECT id, ledger_id, type, parent_id, name, description, quarter, start_date, end_date, open
    FROM calendar_nodes;
DROP TABLE calendar_nodes;
ALTER TABLE calendar_nodes__new RENAME TO calendar_nodes;
CREATE INDEX calendar_nodes_ledger ON calendar_nodes(ledger_id, type);

-- Surface C: .../accounting-periods/{pid}/history, deleted with its period.
CREATE TABLE period_history__new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    period_id   INTEGER NOT NULL REFERENCES calendar_nodes(id) ON DELETE CASCADE,
    open        INTEGER NOT NULL,
    start_date  TEXT NOT NULL,
    end_date    TEXT
);
INSERT INTO period_history__new (id, period_id, open, start_date, end_date)
    SELECT id, period_id, open, start_date, end_date FROM period_history;
DROP TABLE period_history;
ALTER TABLE period_history__new RENAME TO period_history;
CREATE INDEX period_history_period ON period_history(period_id);

-- Surface C: DELETE glruns/{id}.
CREATE TABLE gl_runs__new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    date_started      TEXT,
    date_ended        TEXT,
    status            TEXT NOT NULL,
    num_errors        INTEGER NOT NULL DEFAULT 0,
    run_trigger_type  TEXT NOT NULL,
    gl_run_mode_id    INTEGER,
    ledger_id         INTEGER NOT NULL,
    run_to_date       TEXT NOT NULL
);
INSERT INTO gl_runs__new (id, date_started, date_ended, status, num_errors, run_trigger_type,
        gl_run_mode_id, ledger_id, run_to_date)
    SELECT id, date_started, date_ended, status, num_errors, run_trigger_type, gl_run_mode_id,
        ledger_id, run_to_date
    FROM gl_runs;
DROP TABLE gl_runs;
ALTER TABLE gl_runs__new RENAME TO gl_runs;

-- Surface C: glruns/{id}/errors, deleted with their run.
CREATE TABLE run_errors__new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    collector_run_id  INTEGER,
    gl_run_id         INTEGER,
    error_message     TEXT NOT NULL
);
INSERT INTO run_errors__new (id, collector_run_id, gl_run_id, error_message)
    SELECT id, collector_run_id, gl_run_id, error_message FROM run_errors;
DROP TABLE run_errors;
ALTER TABLE run_errors__new RENAME TO run_errors;
CREATE INDEX run_errors_gl ON run_errors(gl_run_id);
CREATE INDEX run_errors_collector ON run_errors(collector_run_id);

-- Surface C: DELETE ledgers/chargeinfos (the columns of 0004 included, in their order).
CREATE TABLE charge_infos__new (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    created_on           TEXT NOT NULL,
    updated_on           TEXT NOT NULL,
    created_by           TEXT NOT NULL,
    updated_by           TEXT NOT NULL,
    billing_account_num  TEXT NOT NULL,
    core_id              TEXT NOT NULL,
    charge_info_type     TEXT NOT NULL,
    source_kind          TEXT NOT NULL,
    source_id            INTEGER NOT NULL,
    parent_id            INTEGER REFERENCES charge_infos(id),
    collector_run_id     INTEGER,
    ci_values            TEXT NOT NULL DEFAULT '{}',
    billing_account_id   INTEGER,
    charge_date          TEXT,
    amount               TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    currency_code        TEXT,
    charge_category      TEXT,
    invoice_number       TEXT,
    service_id           INTEGER,
    product_id           INTEGER,
    order_number         TEXT,
    UNIQUE (source_kind, source_id)
);
INSERT INTO charge_infos__new (id, created_on, updated_on, created_by, updated_by,
        billing_account_num, core_id, charge_info_type, source_kind, source_id, parent_id,
        collector_run_id, ci_values, billing_account_id, charge_date, amount, currency_code,
        charge_category, invoice_number, service_id, product_id, order_number)
    SELECT id, created_on, updated_on, created_by, updated_by, billing_account_num, core_id,
        charge_info_type, source_kind, source_id, parent_id, collector_run_id, ci_values,
        billing_account_id, charge_date, amount, currency_code, charge_category, invoice_number,
        service_id, product_id, order_number
    FROM charge_infos;
DROP TABLE charge_infos;
ALTER TABLE charge_infos__new RENAME TO charge_infos;
CREATE INDEX charge_infos_created ON charge_infos(created_on);
CREATE INDEX charge_infos_parent ON charge_infos(parent_id);
CREATE INDEX charge_infos_account ON charge_infos(billing_account_id);

-- Surface A: billingAccounts/{eid}/addNote, read back at billingAccounts/{eid}/notes.
CREATE TABLE account_notes (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    billing_account_id  INTEGER NOT NULL REFERENCES billing_accounts(id),
    note                TEXT NOT NULL,
    created_on          TEXT NOT NULL,
    created_by          TEXT
);
CREATE INDEX account_notes_account ON account_notes(billing_account_id);

-- Surface A: billingAccounts/{eid}/billOnDemand turns the account's pending charges into an
-- invoice; the invoice keeps how much it took, so that cancelling it gives them back.
-- invoices/{eid}/cancel records when, so that collectors reverse an invoice they collected.
ALTER TABLE invoices ADD COLUMN billed_pending_charges TEXT COLLATE DECIMAL;
ALTER TABLE invoices ADD COLUMN canceled_at TEXT;
