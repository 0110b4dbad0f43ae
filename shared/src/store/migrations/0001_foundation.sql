-- Foundation schema: every resource the three surfaces share.
-- Money and decimal quantities are TEXT holding canonical rust_decimal strings; the DECIMAL
-- collation (registered on every connection, see store/sqlite.rs) makes comparisons and
-- ORDER BY on them exact. Date-times are RFC 3339 TEXT in UTC ('...Z') so that text order is
-- time order; surfaces render them in the tenant's time zone.

CREATE TABLE tenant_settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE billing_account_categories (
    id                     INTEGER PRIMARY KEY,
    name                   TEXT NOT NULL,
    type                   TEXT,
    description            TEXT NOT NULL,
    status                 TEXT NOT NULL,
    conversion_currency    TEXT
);

CREATE TABLE bill_cycles (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL,
    day_of_month INTEGER NOT NULL
);

CREATE TABLE billing_accounts (
    id                          INTEGER PRIMARY KEY,
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
    next_invoice_date           TEXT
);

CREATE TABLE products (
    id                       INTEGER PRIMARY KEY,
    name                     TEXT NOT NULL,
    sku                      TEXT,
    external_product_number  TEXT
);

CREATE TABLE product_prices (
    id                  INTEGER PRIMARY KEY,
    product_id          INTEGER NOT NULL REFERENCES products(id),
    product_price_type  TEXT NOT NULL,
    price_type          TEXT NOT NULL,
    amount              TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL,
    currency_code       TEXT NOT NULL DEFAULT 'USD'
);

-- Charge categories: adjustment categories (Surface B) are the rows of type Adjustment.
CREATE TABLE charge_categories (
    id                    INTEGER PRIMARY KEY,
    name                  TEXT NOT NULL,
    charge_category_type  TEXT NOT NULL,
    description           TEXT,
    priority              INTEGER NOT NULL DEFAULT 0,
    status                TEXT NOT NULL DEFAULT 'ACTIVE'
);

CREATE TABLE reasons (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL
);

CREATE TABLE agreements (
    id                                INTEGER PRIMARY KEY,
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

CREATE TABLE agreement_products (
    agreement_id INTEGER NOT NULL REFERENCES agreements(id),
    product_id   INTEGER NOT NULL REFERENCES products(id),
    PRIMARY KEY (agreement_id, product_id)
);

-- A service is one product sold to one billing account.
CREATE TABLE services (
    id                  INTEGER PRIMARY KEY,
    billing_account_id  INTEGER NOT NULL REFERENCES billing_accounts(id),
    product_id          INTEGER NOT NULL REFERENCES products(id),
    status              TEXT NOT NULL DEFAULT 'ACTIVE',
    start_date          TEXT NOT NULL,
    end_date            TEXT
);

CREATE TABLE agreement_services (
    id                            INTEGER PRIMARY KEY,
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

-- Service resource identifiers (SRIDs): what usage events name. A child SRID hangs below a
-- parent SRID of the same service.
CREATE TABLE service_resources (
    id              INTEGER PRIMARY KEY,
    service_id      INTEGER NOT NULL REFERENCES services(id),
    identifier      TEXT NOT NULL,
    parent_id       INTEGER REFERENCES service_resources(id),
    status          TEXT NOT NULL DEFAULT 'ACTIVE'
);
CREATE INDEX service_resources_identifier ON service_resources(identifier);

CREATE TABLE true_up_charge_type_relations (
    id                    INTEGER PRIMARY KEY,
    agreement_service_id  INTEGER NOT NULL REFERENCES agreement_services(id),
    true_up_charge_type   TEXT NOT NULL,
    UNIQUE (agreement_service_id, true_up_charge_type)
);

-- Billing periods of a service: what a rated event's service_period names.
CREATE TABLE service_periods (
    id          INTEGER PRIMARY KEY,
    service_id  INTEGER NOT NULL REFERENCES services(id),
    start_date  TEXT NOT NULL,
    end_date    TEXT NOT NULL
);

-- Lookup tables for table-rate usage rules.
CREATE TABLE lookup_tables (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL
);
CREATE TABLE lookup_table_rows (
    id               INTEGER PRIMARY KEY,
    lookup_table_id  INTEGER NOT NULL REFERENCES lookup_tables(id),
    key              TEXT NOT NULL,
    value            TEXT NOT NULL COLLATE DECIMAL,
    valid_from       TEXT,
    valid_to         TEXT
);

-- The rate plan of a product: ordered rules; the first whose condition holds rates the event.
CREATE TABLE usage_rules (
    id                  INTEGER PRIMARY KEY,
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

CREATE TABLE actions (
    id                 INTEGER PRIMARY KEY,
    name               TEXT NOT NULL,
    enabled            INTEGER NOT NULL DEFAULT 1,
    friendly_name      TEXT,
    supports_approval  INTEGER NOT NULL DEFAULT 0,
    action_type        TEXT NOT NULL,
    product_id         INTEGER REFERENCES products(id),
    agreement_id       INTEGER REFERENCES agreements(id),
    bill_cycle_id      INTEGER REFERENCES bill_cycles(id)
);
CREATE TABLE action_operations (
    id              INTEGER PRIMARY KEY,
    action_id       INTEGER NOT NULL REFERENCES actions(id),
    operation_type  TEXT NOT NULL,
    name            TEXT NOT NULL,
    enabled         INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE account_adjustments (
    id                          INTEGER PRIMARY KEY,
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
CREATE TABLE account_adjustment_items (
    id                    INTEGER PRIMARY KEY,
    adjustment_id         INTEGER NOT NULL REFERENCES account_adjustments(id),
    adjustment_item_type  TEXT NOT NULL,
    amount                TEXT NOT NULL COLLATE DECIMAL,
    description           TEXT,
    reason                TEXT,
    secondary_reason      TEXT,
    charge_category_id    INTEGER REFERENCES charge_categories(id)
);
CREATE TABLE adjustment_applications (
    id                           INTEGER PRIMARY KEY,
    adjustment_id                INTEGER NOT NULL REFERENCES account_adjustments(id),
    adjustment_application_type  TEXT NOT NULL,
    invoice_id                   INTEGER,
    amount                       TEXT NOT NULL COLLATE DECIMAL,
    applied_on                   TEXT NOT NULL
);

CREATE TABLE bill_batches (
    id                           INTEGER PRIMARY KEY,
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
    invoice_due_date             TEXT
);
CREATE TABLE bill_batch_accounts (
    bill_batch_id       INTEGER NOT NULL REFERENCES bill_batches(id),
    billing_account_id  INTEGER NOT NULL REFERENCES billing_accounts(id),
    PRIMARY KEY (bill_batch_id, billing_account_id)
);
CREATE TABLE bill_batch_runs (
    id                       INTEGER PRIMARY KEY,
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

CREATE TABLE invoices (
    id                            INTEGER PRIMARY KEY,
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
    status                        TEXT NOT NULL DEFAULT 'OPEN'
);

CREATE TABLE payments (
    id                  INTEGER PRIMARY KEY,
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
CREATE TABLE payment_applications (
    id          INTEGER PRIMARY KEY,
    payment_id  INTEGER NOT NULL REFERENCES payments(id),
    invoice_id  INTEGER NOT NULL REFERENCES invoices(id),
    amount      TEXT NOT NULL COLLATE DECIMAL,
    applied_on  TEXT NOT NULL
);

-- Usage events as posted (voided ones stay), and their charges.
CREATE TABLE usage_events (
    id                           INTEGER PRIMARY KEY,
    request_id                   TEXT NOT NULL,
    service_resource_identifier  TEXT NOT NULL,
    service_resource_id          INTEGER REFERENCES service_resources(id),
    agreement_service_id         INTEGER REFERENCES agreement_services(id),
    billing_account_id           INTEGER REFERENCES billing_accounts(id),
    service_period_id            INTEGER REFERENCES service_periods(id),
    start_time                   TEXT NOT NULL,
    end_time                     TEXT NOT NULL,
    usage_uom                    TEXT NOT NULL,
    usage_amount                 TEXT NOT NULL COLLATE DECIMAL,
    reference_id                 TEXT,
    sequence_id                  TEXT,
    total_charge                 TEXT NOT NULL COLLATE DECIMAL,
    overwrite_counter            INTEGER NOT NULL DEFAULT 0,
    voided                       INTEGER NOT NULL DEFAULT 0,
    created_at                   TEXT NOT NULL
);
CREATE INDEX usage_events_pair ON usage_events(reference_id, sequence_id);
CREATE INDEX usage_events_request ON usage_events(request_id);
CREATE TABLE usage_event_charges (
    id                  INTEGER PRIMARY KEY,
    usage_event_id      INTEGER NOT NULL REFERENCES usage_events(id),
    usage_rule_id       INTEGER NOT NULL REFERENCES usage_rules(id),
    charge_category_id  INTEGER NOT NULL REFERENCES charge_categories(id),
    charge              TEXT NOT NULL COLLATE DECIMAL,
    rate                TEXT,
    usage_uom           TEXT NOT NULL,
    usage_amount        TEXT NOT NULL COLLATE DECIMAL
);

-- Surface C: revenue management.
CREATE TABLE chart_of_accounts (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL
);
CREATE TABLE rule_sets (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL
);
CREATE TABLE gl_run_modes (
    id        INTEGER PRIMARY KEY,
    name      TEXT NOT NULL,
    run_type  TEXT NOT NULL
);
CREATE TABLE ledgers (
    id                          INTEGER PRIMARY KEY,
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
CREATE TABLE ledger_categories (
    ledger_id                    INTEGER NOT NULL REFERENCES ledgers(id) ON DELETE CASCADE,
    billing_account_category_id  INTEGER NOT NULL REFERENCES billing_account_categories(id),
    PRIMARY KEY (ledger_id, billing_account_category_id)
);
-- Accounting calendar nodes: one calendar per ledger, years below it, periods below years.
CREATE TABLE calendar_nodes (
    id           INTEGER PRIMARY KEY,
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
CREATE TABLE period_history (
    id          INTEGER PRIMARY KEY,
    period_id   INTEGER NOT NULL REFERENCES calendar_nodes(id) ON DELETE CASCADE,
    open        INTEGER NOT NULL,
    start_date  TEXT NOT NULL,
    end_date    TEXT
);

CREATE TABLE collectors (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    friendly_name  TEXT NOT NULL,
    description    TEXT,
    "group"        TEXT NOT NULL,
    category       TEXT NOT NULL
);
CREATE TABLE collector_runs (
    id                    INTEGER PRIMARY KEY,
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
CREATE TABLE gl_runs (
    id                INTEGER PRIMARY KEY,
    date_started      TEXT,
    date_ended        TEXT,
    status            TEXT NOT NULL,
    num_errors        INTEGER NOT NULL DEFAULT 0,
    run_trigger_type  TEXT NOT NULL,
    gl_run_mode_id    INTEGER,
    ledger_id         INTEGER NOT NULL,
    run_to_date       TEXT NOT NULL
);
CREATE TABLE run_errors (
    id                INTEGER PRIMARY KEY,
    collector_run_id  INTEGER,
    gl_run_id         INTEGER,
    error_message     TEXT NOT NULL
);
CREATE TABLE charge_infos (
    id                   INTEGER PRIMARY KEY,
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
    UNIQUE (source_kind, source_id)
);
CREATE TABLE charge_info_states (
    ledger_id       INTEGER NOT NULL,
    charge_info_id  INTEGER NOT NULL,
    state           TEXT NOT NULL,
    gl_run_id       INTEGER,
    PRIMARY KEY (ledger_id, charge_info_id)
);
CREATE TABLE journal_entries (
    id              INTEGER PRIMARY KEY,
    gl_run_id       INTEGER NOT NULL,
    ledger_id       INTEGER NOT NULL,
    charge_info_id  INTEGER NOT NULL,
    period_id       INTEGER NOT NULL,
    posting_date    TEXT NOT NULL,
    amount          TEXT NOT NULL COLLATE DECIMAL,
    debit_account   TEXT,
    credit_account  TEXT
);
