-- Partitions are made by whoever needs them now: the maintainer on schedule, `purge` and `migrate`, and any
-- replica whose write found its day without one (issue 37). Two makers at once would both find a day missing and
-- the second would fail on the first's table; a transaction advisory lock makes them take turns instead, and it
-- goes with the transaction, so a maker that dies holds nothing. A day's table that exists but is not attached
-- counts as missing too. The other locks: migrations 7316001, relay 7316002, reconciler 7316003, history
-- maintainer 7316004, history work 7316005.
CREATE OR REPLACE FUNCTION history_partitions_ensure(first_day date, last_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date;
  name text;
  made integer := 0;
  t text;
BEGIN
  PERFORM pg_advisory_xact_lock(7316006);
  FOR day IN SELECT generate_series(first_day, last_day, interval '1 day')::date LOOP
    FOREACH t IN ARRAY ARRAY['notifications', 'notification_variants', 'deliveries'] LOOP
      name := t || to_char(day, '"_p"YYYYMMDD');
      IF to_regclass(format('%I', name)) IS NULL THEN
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, t);
      END IF;
      -- A day's table left detached (by hand) is attached again rather than left missing for ever.
      IF NOT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass(format('%I', name))) THEN
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, name,
                       day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
        made := made + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN made;
END $$;
