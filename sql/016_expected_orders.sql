-- Orders the shop told the service of when it created them (issue 54): `POST /orders/expected` and
-- `orders expect`. An order no notification ever named (a wrong notifyUrl, a sender that gave up after 72 hours, a
-- database failover that lost its last seconds) has no row anywhere else, so the reconciler could never check it.
--
-- A row waits until RECONCILE_AFTER has passed since the order's creation. The reconciler then takes it in
-- (src/reconciliation/scheduleQueries.ts, takeInObservations, a bounded batch a round through
-- expected_orders_waiting): heard of by then (a projection or a refund of it), the row goes; else it gets a row in
-- reconciliation_checks at its creation time, due at once, asked with its POS, on the usual schedule. Its
-- housekeeping drops rows heard of since (a cursor round the table) and rows RECONCILE_GIVE_UP old. The table holds
-- about RECONCILE_AFTER of the shop's orders, and the ones never heard of; nothing here is on the intake's path.
CREATE TABLE expected_orders (
  order_id    text        PRIMARY KEY,
  pos_id      text        NOT NULL,  -- the POS the shop created it for: the credentials that ask
  created_at  timestamptz NOT NULL,  -- when the shop created it (its clock, checked against ours within a skew)
  taken_at    timestamptz            -- when the reconciler took it into its schedule; NULL while it waits
);
CREATE INDEX expected_orders_waiting ON expected_orders (created_at) WHERE taken_at IS NULL;
CREATE INDEX expected_orders_by_created ON expected_orders (created_at);

-- The POS to ask with when order_owners has none: an expected order's, or one a forced check names (sql/017).
ALTER TABLE reconciliation_checks ADD COLUMN pos_id text;
COMMENT ON COLUMN reconciliation_checks.pos_id IS
  'The POS to ask with when nothing recorded bound the order to one (order_owners wins when it has a row)';
