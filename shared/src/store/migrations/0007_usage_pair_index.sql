-- Usage posting speed: one index on (reference_id, sequence_id) instead of two.
-- 0001's plain index served lists by reference_id; 0003's partial unique index kept at most
-- one live event per pair. Every posted event paid an entry in both. This one index does
-- both jobs: its third key is 0 for a live event and the event's own id for a voided one,
-- so two live events of one pair collide (the rule posting enforces, kept by the database
-- too) while voided ones never do; events without both ids hold a NULL key and never
-- collide, as before. Lists by reference_id use its first column; posting finds the live
-- event of a pair through all three (post.rs writes the same CASE expression).
DROP INDEX usage_events_pair;
DROP INDEX usage_events_live_pair;
CREATE UNIQUE INDEX usage_events_pair ON usage_events(
    reference_id, sequence_id, (CASE WHEN voided = 0 THEN 0 ELSE id END));
