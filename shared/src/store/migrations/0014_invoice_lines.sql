-- Invoice lines (shared/src/domain/invoices.rs, docs/billing-lifecycle.md "Invoice lines"):
-- what an invoice bills, one row per part, numbered 1.. within the invoice (`line_num`). An
-- invoice's amount is the sum of its lines; the invoices owner writes both in one
-- transaction. `line_type` is one of RECURRING (a recurring price of a service for
-- [period_start_date, period_end_date)), ONE_TIME (a one-time price of a service), USAGE (the rated
-- usage of one charge category), PENDING (pending charges no rated usage event carries, set by
-- fixture data) and AMOUNT (an invoice made with its amount only: Surface A's create, a
-- fixture invoice without lines). Ids are AUTOINCREMENT, as every table whose ids a client
-- sees (0011).
--
-- Every invoice made before this migration gets one AMOUNT line of its whole amount, so the
-- invariant holds for old data too. A new table and rows derived from invoices: log entries
-- of schema 12 replay unchanged on this one (an invoice a schema-12 writer adds after the
-- migration has no lines; readers take such an invoice as one AMOUNT line).
CREATE TABLE invoice_lines (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    invoice_id          INTEGER NOT NULL REFERENCES invoices(id),
    line_num            INTEGER NOT NULL,
    line_type           TEXT NOT NULL,
    amount              TEXT NOT NULL COLLATE DECIMAL,
    description         TEXT,
    service_id          INTEGER,
    product_id          INTEGER,
    product_price_id    INTEGER,
    charge_category_id  INTEGER,
    period_start_date   TEXT,
    period_end_date     TEXT,
    UNIQUE (invoice_id, line_num)
);

INSERT INTO invoice_lines (invoice_id, line_num, line_type, amount, description)
    SELECT id, 1, 'AMOUNT', amount, 'Invoice amount' FROM invoices ORDER BY id;
