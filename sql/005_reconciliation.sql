-- Reconciliation against the payment service's API (issue 24): what the API said is recorded through the
-- recorder like a notification, with its provenance; and each order's place in the check schedule.

-- How a recorded status was learned: delivered by the sender, or read from the API by reconciliation (the
-- stored body is then the API's answer, and a delivery has no source address).
ALTER TABLE notifications ADD COLUMN observed_via text NOT NULL DEFAULT 'notification'
  CHECK (observed_via IN ('notification', 'reconciliation'));
ALTER TABLE deliveries ADD COLUMN observed_via text NOT NULL DEFAULT 'notification'
  CHECK (observed_via IN ('notification', 'reconciliation'));

-- Orders the reconciler has checked since their last observation (observed_at: the last change of the
-- order or of one of its refunds when the row was written). A newer observation starts the schedule over.
CREATE TABLE reconciliation_checks (
  order_id         text        PRIMARY KEY,
  observed_at      timestamptz NOT NULL,
  attempts         integer     NOT NULL DEFAULT 0,
  next_check_at    timestamptz,
  last_checked_at  timestamptz,
  last_result      text,
  given_up_at      timestamptz
);
CREATE INDEX reconciliation_checks_given_up ON reconciliation_checks (given_up_at) WHERE given_up_at IS NOT NULL;

-- The sweep looks for non-final orders and refunds by status.
CREATE INDEX orders_open ON orders (updated_at) WHERE status NOT IN ('COMPLETED', 'CANCELED');
CREATE INDEX refunds_open ON refunds (order_id) WHERE status = 'PENDING';
