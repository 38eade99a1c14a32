-- Transactional outbox: domain events written in the same transaction as the projection change,
-- published to RabbitMQ by the relay (src/outbox/relay.ts).

-- Per-order event counter: every event of an order (its refunds included) gets the next sequence.
CREATE TABLE event_streams (
  order_id       text   PRIMARY KEY,
  last_sequence  bigint NOT NULL
);

CREATE TABLE outbox_events (
  id               uuid        PRIMARY KEY,  -- the CloudEvents id and the AMQP messageId
  order_id         text        NOT NULL,
  sequence         bigint      NOT NULL,
  type             text        NOT NULL,     -- the routing key, also the CloudEvents type
  message          text        NOT NULL,     -- the CloudEvent exactly as it is published
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at     timestamptz,
  attempts         integer     NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
  last_error       text,
  CONSTRAINT outbox_events_order_sequence UNIQUE (order_id, sequence)
);
-- The relay's work list: small (pending rows only) and ordered the way events must leave.
CREATE INDEX outbox_events_pending ON outbox_events (order_id, sequence) WHERE published_at IS NULL;
CREATE INDEX outbox_events_published ON outbox_events (published_at) WHERE published_at IS NOT NULL;
