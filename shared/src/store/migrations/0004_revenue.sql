-- Revenue chain: the facts of a charge info as columns, so that the charge info
-- filters and ledger runs query them directly (ci_values stays the rendered JSON object),
-- plus the indexes the run, history and charge info lookups need.
ALTER TABLE charge_infos ADD COLUMN billing_account_id INTEGER;
ALTER TABLE charge_infos ADD COLUMN charge_date TEXT;
ALTER TABLE charge_infos ADD COLUMN amount TEXT NOT NULL DEFAULT '0' COLLATE DECIMAL;
ALTER TABLE charge_infos ADD COLUMN currency_code TEXT;
ALTER TABLE charge_infos ADD COLUMN charge_category TEXT;
ALTER TABLE charge_infos ADD COLUMN invoice_number TEXT;
ALTER TABLE charge_infos ADD COLUMN service_id INTEGER;
ALTER TABLE charge_infos ADD COLUMN product_id INTEGER;
ALTER TABLE charge_infos ADD COLUMN order_number TEXT;

CREATE INDEX charge_infos_created ON charge_infos(created_on);
CREATE INDEX charge_infos_parent ON charge_infos(parent_id);
CREATE INDEX charge_infos_account ON charge_infos(billing_account_id);
CREATE INDEX charge_info_states_run ON charge_info_states(gl_run_id);
CREATE INDEX charge_info_states_charge ON charge_info_states(charge_info_id);
CREATE INDEX journal_entries_run ON journal_entries(gl_run_id);
CREATE INDEX journal_entries_charge ON journal_entries(ledger_id, charge_info_id);
CREATE INDEX run_errors_gl ON run_errors(gl_run_id);
CREATE INDEX run_errors_collector ON run_errors(collector_run_id);
CREATE INDEX period_history_period ON period_history(period_id);
CREATE INDEX calendar_nodes_ledger ON calendar_nodes(ledger_id, type);
