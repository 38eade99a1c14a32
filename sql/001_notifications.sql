-- Every verified notification, deduplicated by meaning, with the order and refund projections.
-- Spec: "Events", "Order", "Refund record", "States and transitions".

-- One row per meaning: (order, status) or (refund, status). The first body is kept byte-exact.
CREATE TABLE notifications (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind             text        NOT NULL CHECK (kind IN ('order', 'refund')),
  subject_id       text        NOT NULL,  -- orderId for orders, refundId for refunds
  status           text        NOT NULL,
  order_id         text        NOT NULL,
  outcome          text        NOT NULL CHECK (outcome IN ('applied', 'stale', 'conflict')),
  pos_id           text        NOT NULL,  -- the POS whose second key verified the signature
  key_fingerprint  text        NOT NULL,  -- never the key itself
  body             bytea,                 -- exact bytes received; NULL once purged
  body_sha256      bytea       NOT NULL,
  parsed           jsonb       NOT NULL,  -- the typed notification read from the body
  received_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT notifications_meaning UNIQUE (kind, subject_id, status)
);
CREATE INDEX notifications_by_order ON notifications (order_id, id);

-- A repeat with the same meaning but other bytes (re-serialized by the sender, say).
CREATE TABLE notification_variants (
  notification_id    bigint      NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  body_sha256        bytea       NOT NULL,
  body               bytea,
  first_received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (notification_id, body_sha256)
);

-- Authentic bodies that could not be read: kept with the reason, answered 200, repairable later.
CREATE TABLE quarantined_notifications (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  reason           text        NOT NULL,
  detail           text        NOT NULL,
  pos_id           text        NOT NULL,
  key_fingerprint  text        NOT NULL,
  body             bytea,
  body_sha256      bytea       NOT NULL UNIQUE,
  received_at      timestamptz NOT NULL DEFAULT now(),
  resolved_at      timestamptz,
  resolution       text
);

-- Every delivery attempt that passed verification: the audit trail of what the sender did.
CREATE TABLE deliveries (
  id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  received_at         timestamptz NOT NULL DEFAULT now(),
  source_address      inet,
  processing_time_ms  integer,  -- Svc-Processing-Time header, when present
  pos_id              text      NOT NULL,
  key_fingerprint     text      NOT NULL,
  body_sha256         bytea     NOT NULL,
  outcome             text      NOT NULL
                      CHECK (outcome IN ('accepted', 'duplicate', 'stale', 'conflict', 'quarantined')),
  notification_id     bigint REFERENCES notifications (id) ON DELETE SET NULL,
  quarantine_id       bigint REFERENCES quarantined_notifications (id) ON DELETE SET NULL
);
CREATE INDEX deliveries_by_notification ON deliveries (notification_id) WHERE notification_id IS NOT NULL;

-- Order projection. status_rank mirrors src/recording/statusRules.ts so the forward-only update
-- can be guarded atomically in SQL.
CREATE TABLE orders (
  order_id                 text        PRIMARY KEY,
  ext_order_id             text,
  merchant_pos_id          text,
  status                   text        NOT NULL,
  status_rank              smallint    NOT NULL,
  total_amount             bigint      CHECK (total_amount >= 0),
  currency_code            text,
  payment_id               text,
  pay_method_type          text,
  local_receipt_date_time  text,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);

-- Refund projection. A refund may arrive before anything is known of its order: no foreign key.
CREATE TABLE refunds (
  refund_id           text        PRIMARY KEY,
  order_id            text        NOT NULL,
  ext_order_id        text,
  ext_refund_id       text,
  status              text        NOT NULL,
  status_rank         smallint    NOT NULL,
  amount              bigint      CHECK (amount >= 0),
  currency_code       text,
  status_date_time    text,
  refund_date         text,
  reason              text,
  reason_description  text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_by_order ON refunds (order_id);
