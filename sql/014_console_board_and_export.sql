-- The console in the shop's language (issue 46): what its status board and its finance export read.

-- Whether the payment API answers each POS's checks: written by whichever process checks an order (the reconciler,
-- which is active on one replica only, or a person's check), only when the state changes (and at most every few
-- minutes to say it still holds), so every replica's status board reads the same. Nothing here is on the intake's
-- path.
CREATE TABLE payment_api_reachability (
  pos_id        text        PRIMARY KEY,
  state         text        NOT NULL CHECK (state IN ('answering', 'unreachable', 'refused')),
  entered_at    timestamptz NOT NULL,  -- the first check that found it in this state
  detail        text        NOT NULL DEFAULT '',  -- what failed, as a short code (timeout, network, http_503, ...)
  confirmed_at  timestamptz NOT NULL   -- the latest check that found it so (kept within a few minutes)
);

-- The finance export: the orders that completed and the refunds that were finalized in a time range, in the order
-- they did, per POS. A projection's updated_at moves only when its status does (src/recording/batchStatements.ts), and
-- a final status never changes again: for these rows it is when they became final. Each index holds only final rows,
-- one insertion per order or refund in its life.
CREATE INDEX orders_completed ON orders (merchant_pos_id, updated_at, order_id) WHERE status = 'COMPLETED';
CREATE INDEX refunds_finalized ON refunds (updated_at, refund_id) WHERE status = 'FINALIZED';

-- Needs attention: the payments waiting for the shop's confirmation (auto-receive off), oldest first: few, and
-- cancelled by the payment service if nobody acts.
CREATE INDEX orders_waiting_for_confirmation ON orders (updated_at) WHERE status = 'WAITING_FOR_CONFIRMATION';
