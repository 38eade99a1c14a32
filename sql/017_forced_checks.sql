-- Checks forced into the reconciliation schedule (issue 54): orders to check once, whatever their state here, for a
-- cause (`failover:<id>`, `list:<uuid>` from POST /orders/reconcile, ...). The schedule (reconciliation_checks)
-- holds only orders still open here, so it forgets an order known only through a refund, or a refund of an order
-- already final; a failover can lose exactly those statuses. A row here is one order asked for under one cause:
-- pending (checked_at NULL) until the reconciler checks the order, then how the check ended, kept RECONCILE_GIVE_UP
-- for forcedCheckProgress and the admin API, and dropped by the reconciler's housekeeping (bounded batches). One
-- still pending RECONCILE_GIVE_UP after it was asked for is given up (result `given_up`).
CREATE TABLE forced_checks (
  cause         text        NOT NULL,
  order_id      text        NOT NULL,
  requested_at  timestamptz NOT NULL DEFAULT now(),
  checked_at    timestamptz,
  result        text,       -- a check's result (unchanged, repaired, not_found, unauthorized, ...), no_pos, given_up
  PRIMARY KEY (cause, order_id)
);
-- The sweep asks, for each due order, whether a forced check is pending; the housekeeping gives up old pending ones
-- and drops old answered ones; a cause's progress is read through the primary key.
CREATE INDEX forced_checks_pending ON forced_checks (order_id) WHERE checked_at IS NULL;
CREATE INDEX forced_checks_pending_since ON forced_checks (requested_at) WHERE checked_at IS NULL;
CREATE INDEX forced_checks_answered ON forced_checks (checked_at) WHERE checked_at IS NOT NULL;

-- What a window of time changed (ordersObservedBetween: the recovery after a failover reconciles every order its
-- database still has of the lost window). orders_open and refunds_pending (sql/005, sql/006) hold the open rows by
-- their last change; these hold the final ones. A final status never changes again and a projection's updated_at
-- moves only when the projection does (src/recording/batchQueries.ts), so each index takes about one insertion per
-- order or refund in its life, when it becomes final; the export's indexes (sql/014) are per POS or FINALIZED only
-- and cannot serve a time range of every final row.
CREATE INDEX orders_final ON orders (updated_at) WHERE status IN ('COMPLETED', 'CANCELED');
CREATE INDEX refunds_final ON refunds (updated_at) WHERE status <> 'PENDING';
