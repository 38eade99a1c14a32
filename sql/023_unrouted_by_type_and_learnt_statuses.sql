-- Say what is uncertain (issue 55): what the overview and the status board read.

-- Which event types reached no queue, each since when and until when, and how many of how many orders: one walk of
-- this index per type (there are nine), its newest entries counted up to a bound, read from the index alone. Only
-- unrouted events are in it, as in outbox_events_unrouted (sql/010): an event a queue takes costs it nothing.
CREATE INDEX outbox_events_unrouted_by_type ON outbox_events (type, unrouted_at) INCLUDE (order_id)
  WHERE unrouted_at IS NOT NULL;

-- Notifications that never came: statuses of the last 24 hours learnt by asking the payment service (the reconciler,
-- a person's check) instead of from a notification, by POS. Few of a day's rows; each day's partition gets its own.
CREATE INDEX notifications_learnt ON notifications (received_at) INCLUDE (pos_id, order_id)
  WHERE observed_via <> 'notification';
