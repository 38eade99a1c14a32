-- The event feed and the team replay (issue 44): GET /events and POST /events/replay read the outbox in the order
-- events were stored, a bounded page at a time from a keyset cursor (created_at, id), walking this index. The
-- retention sweep walks it too (events created and published more than OUTBOX_RETENTION ago), so the index of
-- published events it walked before goes: an event still costs three index entries when it is marked published,
-- and one more when it is written (src/outbox/feedQueries.ts, docs/decisions/0015).
-- Built while the outbox's writers wait: a few seconds for a week of events at a hundred a second.
CREATE INDEX outbox_events_by_time ON outbox_events (created_at, id);
DROP INDEX outbox_events_published;

-- Event ids are derived from their notification from this version on (src/outbox/events.ts: eventId), so history can
-- give a deleted event again with the same id (`events rebuild`). Events written before had random ids and times of
-- their own: those still in the outbox are kept here, and so are those that replicas of the previous version write
-- during a rolling upgrade, when the retention sweep deletes them. Events of notifications before derived_from that
-- are not listed here were deleted before this version: their ids are lost, and a rebuild says so.
CREATE TABLE legacy_event_ids (
  notification_id  bigint      PRIMARY KEY,
  event_id         uuid        NOT NULL,
  event_time       timestamptz NOT NULL,  -- the event's `time`
  created_at       timestamptz NOT NULL   -- its place in the feed
);
INSERT INTO legacy_event_ids (notification_id, event_id, event_time, created_at)
SELECT (message::json -> 'data' ->> 'notificationId')::bigint, id, (message::json ->> 'time')::timestamptz, created_at
  FROM outbox_events
ON CONFLICT (notification_id) DO NOTHING;

CREATE TABLE event_id_derivation (
  derived_from  bigint NOT NULL  -- the first notification id whose event id is derived (unless listed above)
);
INSERT INTO event_id_derivation (derived_from)
SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM notification_ids;
