-- The relay's work list in the order it reads it: oldest pending event first, LIMIT a batch.
-- The earlier index on (order_id, sequence) made the relay sort every pending entry with a bitmap
-- scan, and a bitmap scan never marks the entries of events published since as dead: each relay
-- query re-read every event published since the last VACUUM, so it slowed down as traffic went
-- on. An index scan in created_at order stops after one batch and marks those entries as it
-- passes. The per-order check (no earlier pending event of the same order) uses the unique
-- (order_id, sequence) index.
DROP INDEX outbox_events_pending;
CREATE INDEX outbox_events_pending ON outbox_events (created_at) WHERE published_at IS NULL;

-- A queue-like table: rows are updated once (published) and deleted after the retention period.
-- Vacuum it after 1 % of its rows changed rather than the default 20 %, so dead rows stay few.
ALTER TABLE outbox_events SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
