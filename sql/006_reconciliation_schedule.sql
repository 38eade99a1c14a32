-- The reconciliation schedule, kept rather than derived (issues 30 and 31).
--
-- sql/005 found each order's place in the schedule on every sweep, by comparing its last observation
-- (orders.updated_at, with microseconds) with the one the schedule row was about, read back through a
-- JavaScript Date (milliseconds): they never matched, so every check counted as the first and the schedule never
-- widened. And each sweep read every open order, however long ago it was given up, to find the due ones.
--
-- Now a row holds an open order's whole place in the schedule: the observation it is about (`observed_at`, only
-- ever compared in SQL, and `observation`, a counter the reconciler writes each check against), the checks since,
-- the next check, or that it was given up. The reconciler takes new observations in from the last few minutes of
-- orders_open and refunds_pending (reconciliation_progress says how far it got), finds due rows through
-- reconciliation_checks_next, and never reads a given-up row again until a newer observation replaces it.
-- Nothing here runs on the intake's write path.

ALTER TABLE reconciliation_checks ADD COLUMN observation bigint NOT NULL DEFAULT 1;
COMMENT ON COLUMN reconciliation_checks.observed_at IS
  'The observation the row is about: the last change of the order, or of a pending refund of it';
COMMENT ON COLUMN reconciliation_checks.observation IS
  'Bumped when a newer observation replaces observed_at; a check is written only against the one it was about';
COMMENT ON COLUMN reconciliation_checks.next_check_at IS 'NULL once given up';

-- How far the reconciler has taken observations in: every open order observed up to observed_through has its row
-- (a transaction still running then is caught by the next round, which looks a margin further back).
CREATE TABLE reconciliation_progress (
  singleton         boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  observed_through  timestamptz NOT NULL
);

-- Rows of orders no longer open go; every open order gets its row at its last observation, due at once. A row
-- about that observation (sql/005 stored it cut to the millisecond) keeps its place.
DELETE FROM reconciliation_checks c
 WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = c.order_id AND o.status NOT IN ('COMPLETED', 'CANCELED'))
   AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = c.order_id AND r.status = 'PENDING');
CREATE TEMP TABLE observed ON COMMIT DROP AS
WITH open AS (
  SELECT order_id FROM orders WHERE status NOT IN ('COMPLETED', 'CANCELED')
  UNION
  SELECT order_id FROM refunds WHERE status = 'PENDING'
)
SELECT open.order_id,
       greatest((SELECT o.updated_at FROM orders o WHERE o.order_id = open.order_id),
                (SELECT max(r.updated_at) FROM refunds r WHERE r.order_id = open.order_id)) AS observed_at
  FROM open;
UPDATE reconciliation_checks c
   SET observed_at = b.observed_at,
       attempts = CASE WHEN b.same THEN c.attempts ELSE 0 END,
       next_check_at = CASE WHEN b.same THEN c.next_check_at ELSE b.observed_at END,
       given_up_at = CASE WHEN b.same THEN c.given_up_at END
  FROM (SELECT o.order_id, o.observed_at, abs(extract(epoch FROM k.observed_at - o.observed_at)) < 0.001 AS same
          FROM observed o JOIN reconciliation_checks k USING (order_id)) AS b
 WHERE b.order_id = c.order_id;
INSERT INTO reconciliation_checks (order_id, observed_at, next_check_at)
SELECT order_id, observed_at, observed_at FROM observed
ON CONFLICT (order_id) DO NOTHING;
INSERT INTO reconciliation_progress (observed_through) VALUES (now());

-- What the sweep reads: due rows by their next check (a given-up row has none), and new observations by time.
CREATE INDEX reconciliation_checks_next ON reconciliation_checks (next_check_at) WHERE next_check_at IS NOT NULL;
DROP INDEX refunds_open;
CREATE INDEX refunds_pending ON refunds (updated_at) WHERE status = 'PENDING';
