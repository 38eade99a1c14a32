-- The relay reads events by transaction id instead of marking each one published (docs/decisions/0023): every event
-- is written once, by the recording transaction; the relay writes one cursor row a batch.

-- The writer's top-level transaction id. Added without a default (a catalogue change: no rewrite, the existing rows
-- read null), then given one, which applies to new rows only: added with its volatile default at once, the column
-- would rewrite the whole outbox. Both steps, and the index below, may be run by hand before this migration
-- (CONCURRENTLY, outside a transaction: docs/OPERATIONS.md, "Upgrading to the relay cursor"); it then finds them done.
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS xid xid8;
ALTER TABLE outbox_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

-- The relay's read: a range of it from the cursor. Every existing row has a null xid, so the index holds none of
-- them; building it still scans the outbox once, while its writers wait.
CREATE INDEX IF NOT EXISTS outbox_events_by_xid ON outbox_events (xid) WHERE xid IS NOT NULL;

-- The last transaction whose events are all published or held, and the relay's back-off while the broker fails a
-- whole batch (EVENT_RETRY, on this one row instead of on each event). One row, updated once a batch. It starts
-- below every transaction id: a writer that got its id before this migration and waited for its lock still writes
-- its events above it.
CREATE TABLE outbox_cursor (
  singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  xid              xid8        NOT NULL DEFAULT '0',
  advanced_at      timestamptz NOT NULL DEFAULT now(),
  attempts         integer     NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
  last_error       text
);
INSERT INTO outbox_cursor DEFAULT VALUES;

-- When an event below the cursor was published: each row is where the cursor was from `opened_at` to `reached_at`, a
-- second at most; the relay moves the newest row up with the cursor, and starts another once it is a second old.
-- An event was published by the first row from a second before its creation whose xid is at or above its own. At
-- most a row a second (600,000 a week), none while nothing is published; deleted with the outbox's retention.
CREATE TABLE outbox_cursor_history (
  opened_at    timestamptz PRIMARY KEY,
  xid          xid8        NOT NULL,
  reached_at   timestamptz NOT NULL
);

-- Events published one by one, rare: one the broker refused (nack) and the later events of its order, the events of
-- an order a person re-publishes, and the events that waited when this migration ran. Each is published again
-- after EVENT_RETRY; an order's events leave in sequence; confirmed, it leaves the table and its row gets
-- published_at. Empty in normal running.
CREATE TABLE outbox_held (
  event_id         uuid        PRIMARY KEY REFERENCES outbox_events (id) ON DELETE CASCADE,
  order_id         text        NOT NULL,
  sequence         bigint      NOT NULL,
  attempts         integer     NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
  last_error       text,
  held_at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outbox_held_by_order ON outbox_held (order_id, sequence);

INSERT INTO outbox_held (event_id, order_id, sequence, attempts, next_attempt_at, last_error, held_at)
SELECT id, order_id, sequence, attempts, next_attempt_at, last_error, created_at
  FROM outbox_events
 WHERE published_at IS NULL AND xid IS NULL;

-- New events keep published_at null: the partial index of pending events (sql/003) would take every one of them.
-- No event is published by its row any more (those that waited are held now), so it goes, once read above.
DROP INDEX IF EXISTS outbox_events_pending;
