-- A tenant's billing policy (shared/src/domain/policy.rs): the rules its bill runs follow
-- where billing platforms differ. At most one row (id 1); no row is every rule at its
-- default, which is what the sandbox did before the policy existed, so a tenant of schema 12
-- bills the same on 13. Each column's closed set is checked by the domain (`policy::*`) and
-- by the CHECKs below; `autopay_retry_days` is a JSON array of whole days after an invoice's
-- due date, increasing.
--
-- `billing_accounts.payment_term_days`: the account's own payment term (net N days), NULL
-- for the policy's.
--
-- A new table and a nullable column only: log entries of schema 12 replay unchanged on 13.
CREATE TABLE billing_policy (
    id                        INTEGER PRIMARY KEY CHECK (id = 1),
    recurring_timing          TEXT NOT NULL DEFAULT 'ARREARS'
                              CHECK (recurring_timing IN ('ARREARS', 'ADVANCE')),
    proration                 TEXT NOT NULL DEFAULT 'BY_DAY'
                              CHECK (proration IN ('BY_DAY', 'NONE')),
    payment_term_days         INTEGER NOT NULL DEFAULT 30
                              CHECK (payment_term_days BETWEEN 0 AND 365),
    usage_tiers               TEXT NOT NULL DEFAULT 'PER_EVENT'
                              CHECK (usage_tiers IN ('PER_EVENT', 'CUMULATIVE')),
    default_agreement_months  INTEGER NOT NULL DEFAULT 12
                              CHECK (default_agreement_months BETWEEN 1 AND 120),
    runs                      TEXT NOT NULL DEFAULT 'AT_ONCE'
                              CHECK (runs IN ('AT_ONCE', 'WITH_CLOCK')),
    autopay_retry_days        TEXT NOT NULL DEFAULT '[]',
    updated_at                TEXT NOT NULL
);

ALTER TABLE billing_accounts ADD COLUMN payment_term_days INTEGER
    CHECK (payment_term_days IS NULL OR payment_term_days BETWEEN 0 AND 365);
