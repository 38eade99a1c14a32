-- Events no queue took (issue 44): the relay publishes `mandatory`, and an event the broker returns (no queue bound
-- for its routing key) counts as published, its unrouted_at set in the same statement that marks it, instead of being
-- retried forever while its order's later events wait behind it. It stays in the outbox (and in GET /events) for
-- OUTBOX_RETENTION like any published event. NULL for every other event: the column costs a pending event nothing.
ALTER TABLE outbox_events ADD COLUMN unrouted_at timestamptz;
-- Needs attention counts them and tells since when, reading only them (docs/decisions/0014).
CREATE INDEX outbox_events_unrouted ON outbox_events (unrouted_at) WHERE unrouted_at IS NOT NULL;
