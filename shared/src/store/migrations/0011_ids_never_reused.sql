-- Ids a client saw are never handed out again after a restore (or a
-- fork's restore), on any surface.
--
-- 0005 gave AUTOINCREMENT to the tables whose rows a client can delete; a restore keeps each
-- sequence in sqlite_sequence at the highest of its value before, the checkpoint's and the
-- largest id copied (store/capture.rs, `replace_rows`), and in S3 mode the restore entry
-- carries the sequences to every environment. Every other table was numbered max(rowid) + 1,
-- so a restore that undid a record gave its id to the next one: an account created after a
-- checkpoint and undone by a restore had its eid reused, and a client's GET of that eid read
-- another account. So every table whose ids a client sees (on Surface A, B or C, or in a
-- fixture document and its export) is rebuilt here with AUTOINCREMENT, the 0005 procedure:
-- new table (the same columns in the same order, the columns later migrations added
-- included), rows copied with their ids (which starts its sequence at the current maximum,
-- the highest id an existing database still knows), old table dropped, new one renamed,
-- its indexes made again. Foreign keys are off while this runs (store/sqlite.rs, `migrate`);
-- references by name, self-references included (agreements.next_agreement_id,
-- service_resources.parent_id), resolve again once the rebuilt table has its name back. The
-- view usage_charges reads usage_events, and SQLite checks every view when a table is
-- renamed, so it is dropped first and made again at the end, unchanged.
--
-- Left as they are:
-- - sandbox_clock (one row, id 1), sandbox_faults (clients name rules by rule_id) and
--   idempotency_keys (clients name keys by key): no client sees their ids.
-- - usage_event_charges: the charges of events posted before 0008; nothing inserts into it
--   any more (schema-7 log entries replay into it with their ids), and a charge posted since
--   is numbered by its event, whose table is rebuilt here.
-- - join tables without an id of their own (agreement_products, bill_batch_accounts,
--   ledger_categories, charge_info_states) and tenant_settings (keyed by name).
--
-- Names and columns do not change, so log entries of schema 10 replay unchanged on 11.

DROP VIEW usage_charges;

-- account_adjustment_items
CREATE TABLE account_adjustment_items__new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    adjustment_id         INTEGER NOT NULL REFERENCES account_adjustments(id),
    adjustment_item_type  TEXT NOT NULL,
    amount                TEXT NOT NULL COLLATE DECIMAL,
    description           TEXT,
    reason                TEXT,
    secondary_reason      TEXT,
    charge_category_id    INTEGER REFERENCES charge_categories(id)
);
INSERT INTO account_adjustment_items__new (id, adjustment_id, adjustment_item_type, amount,
        description, reason, secondary_reason, charge_category_id)
    SELECT id, adjustment_id, adjustment_item_type, amount, description, reason,
        secondary_reason, charge_category_id
    FROM account_adjustment_items;
DROP TABLE account_adjustment_items;
ALTER TABLE account_adjustment_items__new RENAME TO account_adjustment_items;
CREATE INDEX account_adjustment_items_adjustment ON account_adjustment_items(adjustment_id);

-- account_adjustments
CREATE TABLE account_adjustments__new (
    id                          INTEGER PRIMARY KEY AUTOINCREMENT,
    billing_account_id          INTEGER NOT NULL REFERENCES billing_accounts(id),
    occurred_on                 TEXT NOT NULL,
    amount                      TEXT NOT NULL COLLATE DECIMAL,
    description                 TEXT,
    invoiced                    INTEGER NOT NULL DEFAULT 0,
    status                      TEXT NOT NULL DEFAULT 'POSTED',
    adjustment_type             TEXT NOT NULL DEFAULT 'CREDIT',
    reason_id                   INTEGER REFERENCES reasons(id),
    secondary_reason_id         INTEGER REFERENCES reasons(id),
    posted_on                   TEXT,
    posted_by                   TEXT,
    manual_invoice_application  INTEGER NOT NULL DEFAULT 0,
    unapplied_amount            TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL
);
INSERT INTO account_adjustments__new (id, billing_account_id, occurred_on, amount, description,
        invoiced, status, adjustment_type, reason_id, secondary_reason_id, posted_on,
        posted_by, manual_invoice_application, unapplied_amount)
    SELECT id, billing_account_id, occurred_on, amount, description, invoiced, status,
        adjustment_type, reason_id, secondary_reason_id, posted_on, posted_by,
        manual_invoice_application, unapplied_amount
    FROM account_adjustments;
DROP TABLE account_adjustments;
ALTER TABLE account_adjustments__new RENAME TO account_adjustments;
CREATE INDEX account_adjustments_billing_account ON account_adjustments(billing_account_id);

-- action_operations
CREATE TABLE action_operations__new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    action_id       INTEGER NOT NULL REFERENCES actions(id),
    operation_type  TEXT NOT NULL,
    name            TEXT NOT NULL,
    enabled         INTEGER NOT NULL DEFAULT 1
);
INSERT INTO action_operations__new (id, action_id, operation_type, name, enabled)
    SELECT id, action_id, operation_type, name, enabled
    FROM action_operations;
DROP TABLE action_operations;
ALTER TABLE action_operations__new RENAME TO action_operations;
CREATE INDEX action_operations_action ON action_operations(action_id);

-- actions
CREATE TABLE actions__new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    name               TEXT NOT NULL,
    enabled            INTEGER NOT NULL DEFAULT 1,
    friendly_name      TEXT,
    supports_approval  INTEGER NOT NULL DEFAULT 0,
    action_type        TEXT NOT NULL,
    product_id         INTEGER REFERENCES products(id),
    agreement_id       INTEGER REFERENCES agreements(id),
    bill_cycle_id      INTEGER REFERENCES bill_cycles(id)
);
INSERT INTO actions__new (id, name, enabled, friendly_name, supports_approval, action_type,
        product_id, agreement_id, bill_cycle_id)
    SELECT id, name, enabled, friendly_name, supports_approval, action_type, product_id,
        agreement_id, bill_cycle_id
    FROM actions;
DROP TABLE actions;
ALTER TABLE actions__new RENAME TO actions;
CREATE INDEX actions_bill_cycle ON actions(bill_cycle_id);

-- adjustment_applications
CREATE TABLE adjustment_applications__new (
    id                           INTEGER PRIMARY KEY AUTOINCREMENT,
    adjustment_id                INTEGER NOT NULL REFERENCES account_adjustments(id),
    adjustment_application_type  TEXT NOT NULL,
    invoice_id                   INTEGER,
    amount                       TEXT NOT NULL COLLATE DECIMAL,
    applied_on                   TEXT NOT NULL
);
INSERT INTO adjustment_applications__new (id, adjustment_id, adjustment_application_type,
        invoice_id, amount, applied_on)
    SELECT id, adjustment_id, adjustment_application_type, invoice_id, amount, applied_on
    FROM adjustment_applications;
DROP TABLE adjustment_applications;
ALTER TABLE adjustment_applications__new RENAME TO adjustment_applications;
CREATE INDEX adjustment_applications_adjustment ON adjustment_applications(adjustment_id);

-- agreement_services
CREATE TABLE agreement_services__new (
    id                            INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id                    INTEGER NOT NULL REFERENCES services(id),
    agreement_id                  INTEGER NOT NULL REFERENCES agreements(id),
    status                        TEXT NOT NULL DEFAULT 'ACTIVE',
    start_date                    TEXT NOT NULL,
    end_date                      TEXT,
    next_service_pay_on_purchase  INTEGER NOT NULL DEFAULT 0,
    renewed                       INTEGER NOT NULL DEFAULT 0,
    accumulated_charges_amount    TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    end_action                    TEXT,
    next_agreement_id             INTEGER REFERENCES agreements(id),
    next_end_action               TEXT,
    next_service_product_id       INTEGER REFERENCES products(id),
    next_service_product_price_id INTEGER REFERENCES product_prices(id),
    preserve_service_price        INTEGER NOT NULL DEFAULT 0,
    next_preserve_service_price   INTEGER NOT NULL DEFAULT 0,
    agreement_period              INTEGER NOT NULL DEFAULT 12,
    minimum_amount                TEXT COLLATE DECIMAL,
    minimum_amount_currency_code  TEXT,
    omit_minimum_amount           INTEGER NOT NULL DEFAULT 0
);
INSERT INTO agreement_services__new (id, service_id, agreement_id, status, start_date,
        end_date, next_service_pay_on_purchase, renewed, accumulated_charges_amount,
        end_action, next_agreement_id, next_end_action, next_service_product_id,
        next_service_product_price_id, preserve_service_price, next_preserve_service_price,
        agreement_period, minimum_amount, minimum_amount_currency_code, omit_minimum_amount)
    SELECT id, service_id, agreement_id, status, start_date, end_date,
        next_service_pay_on_purchase, renewed, accumulated_charges_amount, end_action,
        next_agreement_id, next_end_action, next_service_product_id,
        next_service_product_price_id, preserve_service_price, next_preserve_service_price,
        agreement_period, minimum_amount, minimum_amount_currency_code, omit_minimum_amount
    FROM agreement_services;
DROP TABLE agreement_services;
ALTER TABLE agreement_services__new RENAME TO agreement_services;
CREATE INDEX agreement_services_service ON agreement_services(service_id);
CREATE INDEX agreement_services_status ON agreement_services(status);

-- agreements
CREATE TABLE agreements__new (
    id                                INTEGER PRIMARY KEY AUTOINCREMENT,
    name                              TEXT NOT NULL,
    agreement_period                  INTEGER NOT NULL DEFAULT 12,
    agreement_period_type             TEXT NOT NULL DEFAULT 'MONTH',
    status                            TEXT NOT NULL DEFAULT 'ACTIVE',
    termination_flat_charge           TEXT COLLATE DECIMAL,
    termination_percentage_charge     TEXT COLLATE DECIMAL,
    max_termination_charge            TEXT COLLATE DECIMAL,
    prorate_on_cancel                 INTEGER NOT NULL DEFAULT 0,
    adjustment_category_id            INTEGER REFERENCES charge_categories(id),
    end_action                        TEXT,
    termination_fee_currency_code     TEXT,
    max_termination_fee_currency_code TEXT,
    valid_from                        TEXT,
    valid_to                          TEXT,
    next_agreement_id                 INTEGER REFERENCES agreements(id),
    minimum_amount                    TEXT COLLATE DECIMAL,
    minimum_amount_currency_type      TEXT,
    true_up_adjustment_reason_id      INTEGER REFERENCES reasons(id),
    preserve_service_price            INTEGER NOT NULL DEFAULT 0
);
INSERT INTO agreements__new (id, name, agreement_period, agreement_period_type, status,
        termination_flat_charge, termination_percentage_charge, max_termination_charge,
        prorate_on_cancel, adjustment_category_id, end_action, termination_fee_currency_code,
        max_termination_fee_currency_code, valid_from, valid_to, next_agreement_id,
        minimum_amount, minimum_amount_currency_type, true_up_adjustment_reason_id,
        preserve_service_price)
    SELECT id, name, agreement_period, agreement_period_type, status, termination_flat_charge,
        termination_percentage_charge, max_termination_charge, prorate_on_cancel,
        adjustment_category_id, end_action, termination_fee_currency_code,
        max_termination_fee_currency_code, valid_from, valid_to, next_agreement_id,
        minimum_amount, minimum_amount_currency_type, true_up_adjustment_reason_id,
        preserve_service_price
    FROM agreements;
DROP TABLE agreements;
ALTER TABLE agreements__new RENAME TO agreements;

-- bill_batch_runs
CREATE TABLE bill_batch_runs__new (
    id                       INTEGER PRIMARY KEY AUTOINCREMENT,
    bill_batch_id            INTEGER NOT NULL REFERENCES bill_batches(id),
    bill_run_type            TEXT NOT NULL,
    step_status              TEXT,
    sequence                 INTEGER NOT NULL,
    step                     TEXT,
    status                   TEXT NOT NULL,
    status_date              TEXT,
    open_date                TEXT,
    close_date               TEXT,
    scheduled_run_date       TEXT,
    invoice_due_date         TEXT,
    invoice_date             TEXT,
    processed_invoice_count  INTEGER NOT NULL DEFAULT 0,
    error_msg                TEXT,
    use_payment_term         INTEGER NOT NULL DEFAULT 0
);
INSERT INTO bill_batch_runs__new (id, bill_batch_id, bill_run_type, step_status, sequence,
        step, status, status_date, open_date, close_date, scheduled_run_date, invoice_due_date,
        invoice_date, processed_invoice_count, error_msg, use_payment_term)
    SELECT id, bill_batch_id, bill_run_type, step_status, sequence, step, status, status_date,
        open_date, close_date, scheduled_run_date, invoice_due_date, invoice_date,
        processed_invoice_count, error_msg, use_payment_term
    FROM bill_batch_runs;
DROP TABLE bill_batch_runs;
ALTER TABLE bill_batch_runs__new RENAME TO bill_batch_runs;
CREATE INDEX bill_batch_runs_batch ON bill_batch_runs(bill_batch_id);

-- bill_batches
CREATE TABLE bill_batches__new (
    id                           INTEGER PRIMARY KEY AUTOINCREMENT,
    bill_batch_type              TEXT NOT NULL,
    name                         TEXT NOT NULL,
    description                  TEXT,
    end_date                     TEXT,
    auto_approve                 INTEGER NOT NULL DEFAULT 0,
    use_payment_term             INTEGER NOT NULL DEFAULT 0,
    internal_render              INTEGER NOT NULL DEFAULT 0,
    currency_code                TEXT NOT NULL DEFAULT 'USD',
    status                       TEXT NOT NULL DEFAULT 'ACTIVE',
    billing_account_category_id  INTEGER REFERENCES billing_account_categories(id),
    invoice_date                 TEXT,
    invoice_due_date             TEXT,
    bill_cycle_id INTEGER REFERENCES bill_cycles(id)
);
INSERT INTO bill_batches__new (id, bill_batch_type, name, description, end_date, auto_approve,
        use_payment_term, internal_render, currency_code, status, billing_account_category_id,
        invoice_date, invoice_due_date, bill_cycle_id)
    SELECT id, bill_batch_type, name, description, end_date, auto_approve, use_payment_term,
        internal_render, currency_code, status, billing_account_category_id, invoice_date,
        invoice_due_date, bill_cycle_id
    FROM bill_batches;
DROP TABLE bill_batches;
ALTER TABLE bill_batches__new RENAME TO bill_batches;

-- bill_cycles
CREATE TABLE bill_cycles__new (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL,
    day_of_month INTEGER NOT NULL
);
INSERT INTO bill_cycles__new (id, name, day_of_month)
    SELECT id, name, day_of_month
    FROM bill_cycles;
DROP TABLE bill_cycles;
ALTER TABLE bill_cycles__new RENAME TO bill_cycles;

-- billing_account_categories
CREATE TABLE billing_account_categories__new (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    name                   TEXT NOT NULL,
    type                   TEXT,
    description            TEXT NOT NULL,
    status                 TEXT NOT NULL,
    conversion_currency    TEXT
);
INSERT INTO billing_account_categories__new (id, name, type, description, status,
        conversion_currency)
    SELECT id, name, type, description, status, conversion_currency
    FROM billing_account_categories;
DROP TABLE billing_account_categories;
ALTER TABLE billing_account_categories__new RENAME TO billing_account_categories;

-- billing_accounts
CREATE TABLE billing_accounts__new (
    id                          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_num                 TEXT NOT NULL UNIQUE,
    external_account_num        TEXT,
    name                        TEXT NOT NULL,
    billing_account_category_id INTEGER REFERENCES billing_account_categories(id),
    bill_cycle_id               INTEGER REFERENCES bill_cycles(id),
    bill_type                   TEXT NOT NULL DEFAULT 'PAPER',
    automatic_recurring_payment INTEGER NOT NULL DEFAULT 0,
    status                      TEXT NOT NULL DEFAULT 'ACTIVE',
    balance                     TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    pending_charges_total       TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    currency_code               TEXT NOT NULL DEFAULT 'USD',
    tax_exempt                  INTEGER NOT NULL DEFAULT 0,
    start_date                  TEXT,
    end_date                    TEXT,
    next_invoice_date           TEXT,
    billed_through TEXT
);
INSERT INTO billing_accounts__new (id, account_num, external_account_num, name,
        billing_account_category_id, bill_cycle_id, bill_type, automatic_recurring_payment,
        status, balance, pending_charges_total, currency_code, tax_exempt, start_date,
        end_date, next_invoice_date, billed_through)
    SELECT id, account_num, external_account_num, name, billing_account_category_id,
        bill_cycle_id, bill_type, automatic_recurring_payment, status, balance,
        pending_charges_total, currency_code, tax_exempt, start_date, end_date,
        next_invoice_date, billed_through
    FROM billing_accounts;
DROP TABLE billing_accounts;
ALTER TABLE billing_accounts__new RENAME TO billing_accounts;
CREATE INDEX billing_accounts_bill_cycle ON billing_accounts(bill_cycle_id);

-- charge_categories
CREATE TABLE charge_categories__new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    name                  TEXT NOT NULL,
    charge_category_type  TEXT NOT NULL,
    description           TEXT,
    priority              INTEGER NOT NULL DEFAULT 0,
    status                TEXT NOT NULL DEFAULT 'ACTIVE'
);
INSERT INTO charge_categories__new (id, name, charge_category_type, description, priority,
        status)
    SELECT id, name, charge_category_type, description, priority, status
    FROM charge_categories;
DROP TABLE charge_categories;
ALTER TABLE charge_categories__new RENAME TO charge_categories;

-- chart_of_accounts
CREATE TABLE chart_of_accounts__new (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL
);
INSERT INTO chart_of_accounts__new (id, name)
    SELECT id, name
    FROM chart_of_accounts;
DROP TABLE chart_of_accounts;
ALTER TABLE chart_of_accounts__new RENAME TO chart_of_accounts;

-- collector_runs
CREATE TABLE collector_runs__new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    gl_run_mode_id        INTEGER,
    date_started          TEXT,
    date_ended            TEXT,
    status                TEXT NOT NULL,
    run_trigger_type      TEXT NOT NULL,
    num_errors            INTEGER NOT NULL DEFAULT 0,
    type                  TEXT NOT NULL,
    collector_operations  TEXT NOT NULL DEFAULT '[]',
    data_fetch_from_date  TEXT,
    data_fetch_to_date    TEXT,
    overlap_fetch_time    INTEGER NOT NULL DEFAULT 0
);
INSERT INTO collector_runs__new (id, gl_run_mode_id, date_started, date_ended, status,
        run_trigger_type, num_errors, type, collector_operations, data_fetch_from_date,
        data_fetch_to_date, overlap_fetch_time)
    SELECT id, gl_run_mode_id, date_started, date_ended, status, run_trigger_type, num_errors,
        type, collector_operations, data_fetch_from_date, data_fetch_to_date,
        overlap_fetch_time
    FROM collector_runs;
DROP TABLE collector_runs;
ALTER TABLE collector_runs__new RENAME TO collector_runs;

-- collectors
CREATE TABLE collectors__new (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL UNIQUE,
    friendly_name  TEXT NOT NULL,
    description    TEXT,
    "group"        TEXT NOT NULL,
    category       TEXT NOT NULL
);
INSERT INTO collectors__new (id, name, friendly_name, description, "group", category)
    SELECT id, name, friendly_name, description, "group", category
    FROM collectors;
DROP TABLE collectors;
ALTER TABLE collectors__new RENAME TO collectors;

-- gl_run_modes
CREATE TABLE gl_run_modes__new (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    name      TEXT NOT NULL,
    run_type  TEXT NOT NULL
);
INSERT INTO gl_run_modes__new (id, name, run_type)
    SELECT id, name, run_type
    FROM gl_run_modes;
DROP TABLE gl_run_modes;
ALTER TABLE gl_run_modes__new RENAME TO gl_run_modes;

-- invoices
CREATE TABLE invoices__new (
    id                            INTEGER PRIMARY KEY AUTOINCREMENT,
    invoice_num                   TEXT NOT NULL UNIQUE,
    external_invoice_num          TEXT,
    billing_account_id            INTEGER NOT NULL REFERENCES billing_accounts(id),
    original_billing_account_id   INTEGER REFERENCES billing_accounts(id),
    bill_batch_run_id             INTEGER REFERENCES bill_batch_runs(id),
    invoice_type                  TEXT NOT NULL DEFAULT 'STANDARD',
    amount                        TEXT NOT NULL COLLATE DECIMAL,
    amount_to_pay                 TEXT NOT NULL COLLATE DECIMAL,
    description                   TEXT,
    occurred_on                   TEXT NOT NULL,
    due_date                      TEXT,
    paid_date                     TEXT,
    status                        TEXT NOT NULL DEFAULT 'OPEN',
    billed_pending_charges TEXT COLLATE DECIMAL, canceled_at TEXT
);
INSERT INTO invoices__new (id, invoice_num, external_invoice_num, billing_account_id,
        original_billing_account_id, bill_batch_run_id, invoice_type, amount, amount_to_pay,
        description, occurred_on, due_date, paid_date, status, billed_pending_charges,
        canceled_at)
    SELECT id, invoice_num, external_invoice_num, billing_account_id,
        original_billing_account_id, bill_batch_run_id, invoice_type, amount, amount_to_pay,
        description, occurred_on, due_date, paid_date, status, billed_pending_charges,
        canceled_at
    FROM invoices;
DROP TABLE invoices;
ALTER TABLE invoices__new RENAME TO invoices;
CREATE INDEX invoices_bill_batch_run ON invoices(bill_batch_run_id);

-- journal_entries
CREATE TABLE journal_entries__new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    gl_run_id       INTEGER NOT NULL,
    ledger_id       INTEGER NOT NULL,
    charge_info_id  INTEGER NOT NULL,
    period_id       INTEGER NOT NULL,
    posting_date    TEXT NOT NULL,
    amount          TEXT NOT NULL COLLATE DECIMAL,
    debit_account   TEXT,
    credit_account  TEXT
);
INSERT INTO journal_entries__new (id, gl_run_id, ledger_id, charge_info_id, period_id,
        posting_date, amount, debit_account, credit_account)
    SELECT id, gl_run_id, ledger_id, charge_info_id, period_id, posting_date, amount,
        debit_account, credit_account
    FROM journal_entries;
DROP TABLE journal_entries;
ALTER TABLE journal_entries__new RENAME TO journal_entries;
CREATE INDEX journal_entries_run ON journal_entries(gl_run_id);
CREATE INDEX journal_entries_charge ON journal_entries(ledger_id, charge_info_id);

-- lookup_table_rows
CREATE TABLE lookup_table_rows__new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    lookup_table_id  INTEGER NOT NULL REFERENCES lookup_tables(id),
    key              TEXT NOT NULL,
    value            TEXT NOT NULL COLLATE DECIMAL,
    valid_from       TEXT,
    valid_to         TEXT
);
INSERT INTO lookup_table_rows__new (id, lookup_table_id, key, value, valid_from, valid_to)
    SELECT id, lookup_table_id, key, value, valid_from, valid_to
    FROM lookup_table_rows;
DROP TABLE lookup_table_rows;
ALTER TABLE lookup_table_rows__new RENAME TO lookup_table_rows;

-- lookup_tables
CREATE TABLE lookup_tables__new (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL
);
INSERT INTO lookup_tables__new (id, name)
    SELECT id, name
    FROM lookup_tables;
DROP TABLE lookup_tables;
ALTER TABLE lookup_tables__new RENAME TO lookup_tables;

-- payment_applications
CREATE TABLE payment_applications__new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id  INTEGER NOT NULL REFERENCES payments(id),
    invoice_id  INTEGER NOT NULL REFERENCES invoices(id),
    amount      TEXT NOT NULL COLLATE DECIMAL,
    applied_on  TEXT NOT NULL
);
INSERT INTO payment_applications__new (id, payment_id, invoice_id, amount, applied_on)
    SELECT id, payment_id, invoice_id, amount, applied_on
    FROM payment_applications;
DROP TABLE payment_applications;
ALTER TABLE payment_applications__new RENAME TO payment_applications;

-- payments
CREATE TABLE payments__new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    billing_account_id  INTEGER NOT NULL REFERENCES billing_accounts(id),
    amount              TEXT NOT NULL COLLATE DECIMAL,
    description         TEXT,
    reference           TEXT,
    occurred_on         TEXT NOT NULL,
    unapplied_amount    TEXT NOT NULL COLLATE DECIMAL,
    received_amount     TEXT NOT NULL COLLATE DECIMAL,
    refunded_amount     TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    canceled_amount     TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    status              TEXT NOT NULL DEFAULT 'COMPLETED',
    payment_method      TEXT NOT NULL DEFAULT 'cashPayment'
);
INSERT INTO payments__new (id, billing_account_id, amount, description, reference, occurred_on,
        unapplied_amount, received_amount, refunded_amount, canceled_amount, status,
        payment_method)
    SELECT id, billing_account_id, amount, description, reference, occurred_on,
        unapplied_amount, received_amount, refunded_amount, canceled_amount, status,
        payment_method
    FROM payments;
DROP TABLE payments;
ALTER TABLE payments__new RENAME TO payments;

-- product_prices
CREATE TABLE product_prices__new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    product_id          INTEGER NOT NULL REFERENCES products(id),
    product_price_type  TEXT NOT NULL,
    price_type          TEXT NOT NULL,
    amount              TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    currency_code       TEXT NOT NULL DEFAULT 'USD'
);
INSERT INTO product_prices__new (id, product_id, product_price_type, price_type, amount,
        currency_code)
    SELECT id, product_id, product_price_type, price_type, amount, currency_code
    FROM product_prices;
DROP TABLE product_prices;
ALTER TABLE product_prices__new RENAME TO product_prices;

-- products
CREATE TABLE products__new (
    id                       INTEGER PRIMARY KEY AUTOINCREMENT,
    name                     TEXT NOT NULL,
    sku                      TEXT,
    external_product_number  TEXT
);
INSERT INTO products__new (id, name, sku, external_product_number)
    SELECT id, name, sku, external_product_number
    FROM products;
DROP TABLE products;
ALTER TABLE products__new RENAME TO products;

-- reasons
CREATE TABLE reasons__new (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL
);
INSERT INTO reasons__new (id, name)
    SELECT id, name
    FROM reasons;
DROP TABLE reasons;
ALTER TABLE reasons__new RENAME TO reasons;

-- rule_sets
CREATE TABLE rule_sets__new (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL
);
INSERT INTO rule_sets__new (id, name)
    SELECT id, name
    FROM rule_sets;
DROP TABLE rule_sets;
ALTER TABLE rule_sets__new RENAME TO rule_sets;

-- service_periods
CREATE TABLE service_periods__new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id  INTEGER NOT NULL REFERENCES services(id),
    start_date  TEXT NOT NULL,
    end_date    TEXT NOT NULL
);
INSERT INTO service_periods__new (id, service_id, start_date, end_date)
    SELECT id, service_id, start_date, end_date
    FROM service_periods;
DROP TABLE service_periods;
ALTER TABLE service_periods__new RENAME TO service_periods;
CREATE INDEX service_periods_service ON service_periods(service_id, start_date);

-- service_resources
CREATE TABLE service_resources__new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id      INTEGER NOT NULL REFERENCES services(id),
    identifier      TEXT NOT NULL,
    parent_id       INTEGER REFERENCES service_resources(id),
    status          TEXT NOT NULL DEFAULT 'ACTIVE'
);
INSERT INTO service_resources__new (id, service_id, identifier, parent_id, status)
    SELECT id, service_id, identifier, parent_id, status
    FROM service_resources;
DROP TABLE service_resources;
ALTER TABLE service_resources__new RENAME TO service_resources;
CREATE INDEX service_resources_identifier ON service_resources(identifier);
CREATE INDEX service_resources_service ON service_resources(service_id);

-- services
CREATE TABLE services__new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    billing_account_id  INTEGER NOT NULL REFERENCES billing_accounts(id),
    product_id          INTEGER NOT NULL REFERENCES products(id),
    status              TEXT NOT NULL DEFAULT 'ACTIVE',
    start_date          TEXT NOT NULL,
    end_date            TEXT,
    one_time_billed_at TEXT
);
INSERT INTO services__new (id, billing_account_id, product_id, status, start_date, end_date,
        one_time_billed_at)
    SELECT id, billing_account_id, product_id, status, start_date, end_date, one_time_billed_at
    FROM services;
DROP TABLE services;
ALTER TABLE services__new RENAME TO services;
CREATE INDEX services_billing_account ON services(billing_account_id);

-- usage_events
CREATE TABLE usage_events__new (
    id                           INTEGER PRIMARY KEY AUTOINCREMENT,
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
    charge_usage_amount          TEXT COLLATE DECIMAL,
    invoice_id INTEGER
);
INSERT INTO usage_events__new (id, request_id, service_resource_identifier,
        service_resource_id, agreement_service_id, billing_account_id, service_period_id,
        start_time, end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge,
        overwrite_counter, voided, created_at, voided_at, usage_rule_id, charge_category_id,
        charge_rate, charge_usage_uom, charge_usage_amount, invoice_id)
    SELECT id, request_id, service_resource_identifier, service_resource_id,
        agreement_service_id, billing_account_id, service_period_id, start_time, end_time,
        usage_uom, usage_amount, reference_id, sequence_id, total_charge, overwrite_counter,
        voided, created_at, voided_at, usage_rule_id, charge_category_id, charge_rate,
        charge_usage_uom, charge_usage_amount, invoice_id
    FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events__new RENAME TO usage_events;
CREATE UNIQUE INDEX usage_events_pair ON usage_events(
    reference_id, sequence_id, (CASE WHEN voided = 0 THEN 0 ELSE id END));
CREATE INDEX usage_events_request ON usage_events(request_id);
CREATE INDEX usage_events_account ON usage_events(billing_account_id);
CREATE INDEX usage_events_period ON usage_events(service_period_id);

-- usage_rules
CREATE TABLE usage_rules__new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    product_id          INTEGER NOT NULL REFERENCES products(id),
    position            INTEGER NOT NULL,
    name                TEXT NOT NULL,
    charge_category_id  INTEGER NOT NULL REFERENCES charge_categories(id),
    -- condition
    uom                 TEXT NOT NULL,
    min_amount          TEXT COLLATE DECIMAL,
    max_amount          TEXT COLLATE DECIMAL,
    valid_from          TEXT,
    valid_to            TEXT,
    attribute_match     TEXT,
    -- rate: kind FLAT | TIERED | TABLE | PASS_THROUGH; definition is JSON per kind
    rate_kind           TEXT NOT NULL,
    rate                TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO usage_rules__new (id, product_id, position, name, charge_category_id, uom,
        min_amount, max_amount, valid_from, valid_to, attribute_match, rate_kind, rate)
    SELECT id, product_id, position, name, charge_category_id, uom, min_amount, max_amount,
        valid_from, valid_to, attribute_match, rate_kind, rate
    FROM usage_rules;
DROP TABLE usage_rules;
ALTER TABLE usage_rules__new RENAME TO usage_rules;

-- The view over usage_events and usage_event_charges (0008), made again.
CREATE VIEW usage_charges AS
    SELECT id, usage_event_id, usage_rule_id, charge_category_id, charge, rate, usage_uom,
        usage_amount
    FROM usage_event_charges
    UNION ALL
    SELECT id, id, usage_rule_id, charge_category_id, total_charge, charge_rate,
        charge_usage_uom, charge_usage_amount
    FROM usage_events
    WHERE usage_rule_id IS NOT NULL;
