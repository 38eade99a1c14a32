-- The relay's work list, indexed in the order it reads it (oldest pending event first).
-- The relay walks this index with an index scan (its connection has bitmap scans off), and an
-- index scan marks the entries of events published since as dead, so later scans skip them and
-- they are removed as their index pages fill, vacuum or not. With the earlier index on
-- (order_id, sequence) the planner chose a bitmap scan, which never marks anything: every claim
-- re-read every event published since the last VACUUM and grew slower as traffic went on.
-- The per-order check (no earlier pending event of the same order) uses the unique
-- (order_id, sequence) index.
DROP INDEX outbox_events_pending;
CREATE INDEX outbox_events_pending ON outbox_events (created_at) WHERE published_at IS NULL;
