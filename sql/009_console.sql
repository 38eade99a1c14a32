-- The console (issue 40): what its one search box looks up, and the audit trail of its sign-ins and actions.

-- The search finds an order by any id a person may hold. orderId and refundId are primary keys; these are the
-- others. Partial: most rows of a seeded or real history carry them, and NULLs are never searched.
CREATE INDEX orders_by_ext_order_id ON orders (ext_order_id) WHERE ext_order_id IS NOT NULL;
CREATE INDEX orders_by_payment_id ON orders (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX refunds_by_ext_refund_id ON refunds (ext_refund_id) WHERE ext_refund_id IS NOT NULL;

-- Needs attention lists the quarantined notifications not yet retried, newest first, without reading resolved ones.
CREATE INDEX quarantined_notifications_open ON quarantined_notifications (id) WHERE resolved_at IS NULL;
-- and the conflicts and disagreements of the last days, newest first (few rows; each day's partition gets its own).
CREATE INDEX notifications_troubled ON notifications (received_at) WHERE outcome = 'conflict' OR disagreements IS NOT NULL;

-- Recent deliveries, newest first by id, within a window of receive times. A window's partitions include the days
-- before it (a repeat lives in its notification's day), whose rows are almost all outside the window: with
-- received_at (and pos_id) in the index, each such day is skipped in its index alone instead of fetching every row
-- of it from the heap (40 ms to 5 ms for the last 24 h of a 2,000,000-order year).
CREATE INDEX deliveries_newest ON deliveries (id, received_at, pos_id);
-- Filtered by an outcome other than accepted (rare ones: conflict, stale, quarantined), they walk this instead of a
-- month of deliveries (150 ms for a month of a 200,000-order year without it, 2 ms with it). Accepted deliveries,
-- most of them, are not in it: the intake's insert pays for it only on the others.
CREATE INDEX deliveries_unusual ON deliveries (outcome, id, received_at) WHERE outcome <> 'accepted';

-- Every sign-in (failed ones included) and every action of the console: who, as what, did what to what, and
-- how it ended. Kept under AUDIT_RETENTION by the history maintainer and `purge`.
CREATE TABLE console_audit (
  id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at        timestamptz NOT NULL DEFAULT now(),
  actor     text        NOT NULL,  -- the token's name; '(unknown)' for a failed sign-in
  role      text        CHECK (role IN ('viewer', 'operator')),
  action    text        NOT NULL,
  target    text,                  -- what it acted on (an order id, a quarantine id, a filter), as text
  order_id  text,                  -- the order it concerns, for the order page
  result    text        NOT NULL,
  detail    text        NOT NULL DEFAULT ''
);
CREATE INDEX console_audit_by_order ON console_audit (order_id, id) WHERE order_id IS NOT NULL;
CREATE INDEX console_audit_by_at ON console_audit (at);
