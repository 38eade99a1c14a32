-- A POS's key vouches for its own payments only; the facts of an order or refund are never rewritten;
-- replays of one notification are counted rather than stored a row each.

-- The POS an order belongs to: bound by the first authentic notification recorded for the order or for
-- one of its refunds (the order's merchantPosId, else the POS whose key verified it). Never changes:
-- later notifications of the order and its refunds must verify with a key of this POS.
CREATE TABLE order_owners (
  order_id  text        PRIMARY KEY,
  pos_id    text        NOT NULL,
  bound_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO order_owners (order_id, pos_id)
SELECT DISTINCT ON (n.order_id) n.order_id, coalesce(o.merchant_pos_id, n.pos_id)
  FROM notifications n
  LEFT JOIN orders o ON o.order_id = n.order_id
 ORDER BY n.order_id, n.id;

-- What a notification said that the projection did not take: [{"field", "kept", "received"}], for facts
-- that never change once known (an order's POS, amount, currency, extOrderId; a refund's order, amount,
-- currency). NULL when it agreed.
ALTER TABLE notifications ADD COLUMN disagreements jsonb;

-- Deliveries of one notification (or one quarantined body) past the first 100 are counted here instead of
-- adding a row each: a captured body verifies forever, and its replays must not grow the audit without
-- bound.
CREATE TABLE delivery_repeats (
  notification_id  bigint      REFERENCES notifications (id) ON DELETE CASCADE,
  quarantine_id    bigint      REFERENCES quarantined_notifications (id) ON DELETE CASCADE,
  deliveries       bigint      NOT NULL,
  first_at         timestamptz NOT NULL DEFAULT now(),
  last_at          timestamptz NOT NULL DEFAULT now(),
  CHECK ((notification_id IS NULL) <> (quarantine_id IS NULL))
);
CREATE UNIQUE INDEX delivery_repeats_notification ON delivery_repeats (notification_id) WHERE notification_id IS NOT NULL;
CREATE UNIQUE INDEX delivery_repeats_quarantine ON delivery_repeats (quarantine_id) WHERE quarantine_id IS NOT NULL;
CREATE INDEX deliveries_by_quarantine ON deliveries (quarantine_id) WHERE quarantine_id IS NOT NULL;

-- An order's projected merchantPosId is the POS it belongs to.
UPDATE orders o SET merchant_pos_id = w.pos_id FROM order_owners w WHERE w.order_id = o.order_id AND o.merchant_pos_id IS NULL;
