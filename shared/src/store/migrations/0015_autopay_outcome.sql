-- The outcome of an account's automatic payments a test chooses, as payment platforms' test
-- cards do (shared/src/domain/billing/dues.rs): NULL or SUCCEED pays (the sandbox's
-- behaviour before the column), DECLINE declines every attempt, DECLINE_THEN_SUCCEED
-- declines the first `autopay_declines` attempts of each invoice. A declined attempt is a
-- CANCELED payment (its whole amount canceled, nothing received or applied).
--
-- Nullable columns only: log entries of schema 14 replay unchanged on 15.
ALTER TABLE billing_accounts ADD COLUMN autopay_outcome TEXT
    CHECK (autopay_outcome IS NULL
           OR autopay_outcome IN ('SUCCEED', 'DECLINE', 'DECLINE_THEN_SUCCEED'));
ALTER TABLE billing_accounts ADD COLUMN autopay_declines INTEGER
    CHECK (autopay_declines IS NULL OR autopay_declines BETWEEN 1 AND 10);
