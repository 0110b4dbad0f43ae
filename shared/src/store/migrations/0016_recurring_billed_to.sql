-- How far a service's recurring prices are billed (shared/src/domain/billing/invoicing.rs):
-- the end (a stored instant, exclusive) of the last period a run billed it for in advance.
-- A run billing in advance bills each service from here (or from its account's
-- `billed_through`, whichever is later), so that no period is billed twice when a tenant
-- switches between ADVANCE and ARREARS; runs billing in arrears read it and do not write it
-- (their account's `billed_through` already says where they stopped). NULL: never billed
-- in advance.
--
-- A nullable column only: log entries of schema 15 replay unchanged on 16.
ALTER TABLE services ADD COLUMN recurring_billed_to TEXT;
