-- Surface B queries: indexes for the lookups its lists make per record (nested collections
-- loaded by parent id, many-valued filter fields checked with EXISTS by parent id) and for the
-- commonest named filters. Without them each of those is a scan of the child table.

CREATE INDEX agreement_services_service ON agreement_services(service_id);
CREATE INDEX agreement_services_status ON agreement_services(status);
CREATE INDEX services_billing_account ON services(billing_account_id);
CREATE INDEX service_resources_service ON service_resources(service_id);
CREATE INDEX true_up_relations_agreement_service ON true_up_charge_type_relations(agreement_service_id);
CREATE INDEX agreement_products_product ON agreement_products(product_id);
CREATE INDEX actions_bill_cycle ON actions(bill_cycle_id);
CREATE INDEX action_operations_action ON action_operations(action_id);
CREATE INDEX account_adjustments_billing_account ON account_adjustments(billing_account_id);
CREATE INDEX account_adjustment_items_adjustment ON account_adjustment_items(adjustment_id);
CREATE INDEX adjustment_applications_adjustment ON adjustment_applications(adjustment_id);
CREATE INDEX bill_batch_accounts_account ON bill_batch_accounts(billing_account_id);
CREATE INDEX bill_batch_runs_batch ON bill_batch_runs(bill_batch_id);
CREATE INDEX invoices_bill_batch_run ON invoices(bill_batch_run_id);
