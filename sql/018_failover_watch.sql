-- A failover that lost its last seconds loses no payment status (issue 54, docs/decisions/0021).
--
-- Every replica watches the database it writes to (src/failover/databaseWatch.ts): once a second it moves the beat
-- of database_watch forward, and it reads the server's identity (system identifier and timeline) beside it. A
-- promoted standby that missed the last seconds answers with an older beat, or another timeline, than the replica
-- saw: the failover is noticed, written to `failovers` once (whichever replica notices first), and recovered from
-- the journal of recorded notifications the service keeps in RabbitMQ. Nothing here is on the intake's write path.

-- One row: the beat (a counter every replica moves forward) and when it last moved, and the identity of the server
-- the service last knew. What a promoted standby holds of this row is where its history ends.
CREATE TABLE database_watch (
  singleton          boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  beat               bigint      NOT NULL DEFAULT 0,
  beat_at            timestamptz NOT NULL DEFAULT now(),
  server             text,       -- the server's system identifier (pg_control_system()); NULL while unknown
  timeline           integer     -- the timeline it writes WAL on; NULL while unknown or unreadable
);
INSERT INTO database_watch DEFAULT VALUES;

-- Each failover noticed, and its recovery: restoring from the journal (writes are held meanwhile), then reconciling
-- the orders of the window before it against the payment API, then done. Few rows: one per failover.
CREATE TABLE failovers (
  id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  noticed_at         timestamptz NOT NULL DEFAULT now(),
  noticed_by         text        NOT NULL,  -- the replica (host name) that wrote the row
  cause              text        NOT NULL CHECK (cause IN ('timeline', 'server', 'beat')),
  previous_identity  text        NOT NULL,  -- what the service knew: 'timeline 1 of server …', or the beat
  current_identity   text        NOT NULL,
  -- Where the promoted database's history ends: the last beat it holds. The journal is read back from a little
  -- before it, and the orders changed in the window before it are reconciled.
  last_point         timestamptz NOT NULL,
  state              text        NOT NULL DEFAULT 'restoring' CHECK (state IN ('restoring', 'reconciling', 'done')),
  journal_read       integer     NOT NULL DEFAULT 0,  -- entries read back
  restored           integer     NOT NULL DEFAULT 0,  -- statuses and quarantined bodies recorded again
  already_recorded   integer     NOT NULL DEFAULT 0,  -- entries the promoted database still had
  set_aside          integer     NOT NULL DEFAULT 0,  -- entries that failed verification (never recorded)
  journal_problem    text,                            -- why the journal could not be read back, when it could not
  window_orders      integer,                         -- orders of the window put to the payment API
  uncovered          integer,                         -- of those, the ones no check could settle
  restored_at        timestamptz,
  done_at            timestamptz
);
CREATE INDEX failovers_open ON failovers (id) WHERE state <> 'done';

-- A status can now be learnt a third way: restored from the journal after a failover. The check is swapped on both
-- tables and on each of their day partitions (a partition made with LIKE ... INCLUDING CONSTRAINTS keeps a copy of
-- its own, which dropping the parent's leaves). The new one is added NOT VALID: every row already there satisfies
-- it, and validating it would read every partition of history.
DO $$
DECLARE
  t text;
  part regclass;
  check_name text;
BEGIN
  FOREACH t IN ARRAY ARRAY['notifications', 'deliveries'] LOOP
    FOR check_name IN
      SELECT conname FROM pg_constraint
       WHERE conrelid = t::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%observed_via%'
    LOOP
      EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, check_name);
      FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t::regclass LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT IF EXISTS %I', part, check_name);
      END LOOP;
    END LOOP;
    EXECUTE format(
      'ALTER TABLE %I ADD CONSTRAINT %I CHECK (observed_via IN (''notification'', ''reconciliation'', ''restoration'')) NOT VALID',
      t, t || '_observed_via');
  END LOOP;
END $$;
