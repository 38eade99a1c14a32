-- History by the day: notifications are partitioned by the day they were first received (UTC), and their variants and
-- deliveries live with them, in the partition of their notification's day. Retention drops whole days; a
-- notification and everything about it are found in one partition, and live and go together (issue 30;
-- docs/decisions/0012-history-partitioned-by-day.md).
--
-- - Each day has one partition per table, named <table>_pYYYYMMDD, made by history_partitions_ensure() below,
--   here for the days the history spans and a week ahead, then by the service's maintainer (src/history/).
-- - What dedup needs moves to the projections: orders.recorded and refunds.recorded map each status recorded to
--   its notification's id and receive time. Projections are never removed, so a repeat is recognized by one index
--   (the projection's key) whatever the history's age, and its notification is found in one partition.
-- - Rows reference each other across the partitioned tables by value: a foreign key would forbid dropping a day.
-- - The existing history is copied into the partitions, in this one transaction: its time grows with its size (93 s
--   for a million notifications and 1.25 million deliveries on the 2-core development machine, under load), and the
--   intake waits meanwhile (503, Retry-After; the sender retries).

-- status_rank mirrors src/recording/statusRules.ts for readers of the table; the rule is applied in the recorder,
-- under its orders' locks, never re-checked here (sql/001's comment said otherwise).
COMMENT ON COLUMN orders.status_rank IS 'Rank of status in src/recording/statusRules.ts, for readers; not re-checked';
COMMENT ON COLUMN refunds.status_rank IS 'Rank of status in src/recording/statusRules.ts, for readers; not re-checked';

ALTER TABLE notifications RENAME TO notifications_before_007;
ALTER TABLE deliveries RENAME TO deliveries_before_007;
ALTER TABLE notification_variants RENAME TO notification_variants_before_007;
ALTER INDEX notifications_by_order RENAME TO notifications_before_007_by_order;
ALTER INDEX deliveries_by_notification RENAME TO deliveries_before_007_by_notification;
ALTER INDEX deliveries_by_quarantine RENAME TO deliveries_before_007_by_quarantine;
ALTER TABLE delivery_repeats DROP CONSTRAINT delivery_repeats_notification_id_fkey;
ALTER TABLE delivery_repeats DROP CONSTRAINT delivery_repeats_quarantine_id_fkey;

-- Ids keep counting from where the identity left them; the recorder reserves them (nextval) before it inserts.
CREATE SEQUENCE notification_ids AS bigint;
SELECT setval('notification_ids', coalesce((SELECT max(id) FROM notifications_before_007), 0) + 1, false);
CREATE SEQUENCE delivery_ids AS bigint;
SELECT setval('delivery_ids', coalesce((SELECT max(id) FROM deliveries_before_007), 0) + 1, false);

-- One row per status recorded for an order or a refund, within retention. The first body is kept byte-exact until
-- the body retention.
CREATE TABLE notifications (
  id               bigint      NOT NULL DEFAULT nextval('notification_ids'),
  kind             text        NOT NULL CHECK (kind IN ('order', 'refund')),
  subject_id       text        NOT NULL,  -- orderId for orders, refundId for refunds
  status           text        NOT NULL,
  order_id         text        NOT NULL,
  outcome          text        NOT NULL CHECK (outcome IN ('applied', 'stale', 'conflict')),
  pos_id           text        NOT NULL,
  key_fingerprint  text        NOT NULL,
  body             bytea,
  body_sha256      bytea       NOT NULL,
  parsed           jsonb       NOT NULL,
  received_at      timestamptz NOT NULL DEFAULT now(),
  disagreements    jsonb,
  observed_via     text        NOT NULL DEFAULT 'notification' CHECK (observed_via IN ('notification', 'reconciliation')),
  PRIMARY KEY (id, received_at)
) PARTITION BY RANGE (received_at);
CREATE INDEX notifications_by_order ON notifications (order_id, id);
ALTER SEQUENCE notification_ids OWNED BY notifications.id;

-- A repeat with the same meaning but other bytes (re-serialized by the sender, say), with its notification.
CREATE TABLE notification_variants (
  notification_id           bigint      NOT NULL,
  body_sha256               bytea       NOT NULL,
  body                      bytea,
  first_received_at         timestamptz NOT NULL DEFAULT now(),
  notification_received_at  timestamptz NOT NULL  -- its notification's received_at: the day it lives in
) PARTITION BY RANGE (notification_received_at);
CREATE INDEX notification_variants_by_notification ON notification_variants (notification_id);

-- Every delivery attempt that passed verification, with the notification (or quarantined body) it delivered.
CREATE TABLE deliveries (
  id                  bigint      NOT NULL DEFAULT nextval('delivery_ids'),
  received_at         timestamptz NOT NULL DEFAULT now(),
  source_address      inet,
  processing_time_ms  integer,
  pos_id              text        NOT NULL,
  key_fingerprint     text        NOT NULL,
  body_sha256         bytea       NOT NULL,
  outcome             text        NOT NULL
                      CHECK (outcome IN ('accepted', 'duplicate', 'stale', 'conflict', 'quarantined')),
  notification_id     bigint,
  quarantine_id       bigint,
  observed_via        text        NOT NULL DEFAULT 'notification' CHECK (observed_via IN ('notification', 'reconciliation')),
  -- When what it delivered was first received (the notification's or the quarantined body's received_at): the day
  -- it lives in.
  notification_received_at  timestamptz NOT NULL,
  PRIMARY KEY (id, notification_received_at)
) PARTITION BY RANGE (notification_received_at);
CREATE INDEX deliveries_by_notification ON deliveries (notification_id) WHERE notification_id IS NOT NULL;
CREATE INDEX deliveries_by_quarantine ON deliveries (quarantine_id) WHERE quarantine_id IS NOT NULL;
ALTER SEQUENCE delivery_ids OWNED BY deliveries.id;

-- The days' partitions of the three tables, for every day from first_day to last_day (UTC) that has none yet.
-- The one way partitions are made: this migration, and the service's maintainer (src/history/). Each is made
-- empty, then attached: attaching takes a lock that lets rows be written and read meanwhile, where CREATE TABLE
-- ... PARTITION OF would hold every writer of the table until it got its own lock.
CREATE FUNCTION history_partitions_ensure(first_day date, last_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date;
  name text;
  made integer := 0;
  t text;
BEGIN
  FOR day IN SELECT generate_series(first_day, last_day, interval '1 day')::date LOOP
    FOREACH t IN ARRAY ARRAY['notifications', 'notification_variants', 'deliveries'] LOOP
      name := t || to_char(day, '"_p"YYYYMMDD');
      IF to_regclass(format('%I', name)) IS NULL THEN
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, name,
                       day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
        made := made + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN made;
END $$;

SELECT history_partitions_ensure(
  (least((SELECT min(received_at) FROM notifications_before_007),
         (SELECT min(received_at) FROM quarantined_notifications),
         (SELECT min(received_at) FROM deliveries_before_007),
         now()) AT TIME ZONE 'UTC')::date,
  (now() AT TIME ZONE 'UTC')::date + 7);

INSERT INTO notifications (id, kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256,
                           parsed, received_at, disagreements, observed_via)
SELECT id, kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256, parsed,
       received_at, disagreements, observed_via
  FROM notifications_before_007;
INSERT INTO notification_variants (notification_id, body_sha256, body, first_received_at, notification_received_at)
SELECT v.notification_id, v.body_sha256, v.body, v.first_received_at, n.received_at
  FROM notification_variants_before_007 v JOIN notifications_before_007 n ON n.id = v.notification_id;
INSERT INTO deliveries (id, received_at, source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256,
                        outcome, notification_id, quarantine_id, observed_via, notification_received_at)
SELECT d.id, d.received_at, d.source_address, d.processing_time_ms, d.pos_id, d.key_fingerprint, d.body_sha256,
       d.outcome, d.notification_id, d.quarantine_id, d.observed_via,
       coalesce(n.received_at, q.received_at, d.received_at)
  FROM deliveries_before_007 d
  LEFT JOIN notifications_before_007 n ON n.id = d.notification_id
  LEFT JOIN quarantined_notifications q ON q.id = d.quarantine_id;

-- Each status recorded for a projection: {"STATUS": {"id": "<notification id>", "at": "<received_at>"}}.
ALTER TABLE orders ADD COLUMN recorded jsonb NOT NULL DEFAULT '{}';
ALTER TABLE refunds ADD COLUMN recorded jsonb NOT NULL DEFAULT '{}';
UPDATE orders o SET recorded = m.recorded
  FROM (SELECT subject_id, jsonb_object_agg(status, jsonb_build_object('id', id::text, 'at', received_at)) AS recorded
          FROM notifications_before_007 WHERE kind = 'order' GROUP BY subject_id) m
 WHERE m.subject_id = o.order_id;
UPDATE refunds r SET recorded = m.recorded
  FROM (SELECT subject_id, jsonb_object_agg(status, jsonb_build_object('id', id::text, 'at', received_at)) AS recorded
          FROM notifications_before_007 WHERE kind = 'refund' GROUP BY subject_id) m
 WHERE m.subject_id = r.refund_id;

DROP TABLE deliveries_before_007;
DROP TABLE notification_variants_before_007;
DROP TABLE notifications_before_007;

-- Retention removes what refers to removed days: counters of repeats by their last delivery, quarantined bodies by
-- their receipt.
CREATE INDEX delivery_repeats_by_last ON delivery_repeats (last_at);
CREATE INDEX quarantined_notifications_by_received ON quarantined_notifications (received_at);

-- Days whose bodies were purged (BODY_RETENTION, `purge --days`): a purge reads only the days not purged yet.
CREATE TABLE history_bodies_purged (
  day        date        PRIMARY KEY,
  purged_at  timestamptz NOT NULL DEFAULT now()
);
