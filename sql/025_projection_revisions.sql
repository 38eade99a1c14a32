-- One round trip per recording transaction (issue 58, docs/decisions/0024): the recorder decides from the state it
-- kept of recent orders, and its one statement checks at write time that the state was right, or fails whole.

-- A random token, never a counter or a transaction id: a promoted standby reissues those, and could give a row back
-- the value a lost commit had written. About 60 random bits (a version 4 UUID's first 64 bits).
CREATE FUNCTION new_revision() RETURNS bigint
  LANGUAGE sql VOLATILE PARALLEL SAFE
  AS $$ SELECT ('x' || translate(gen_random_uuid()::text, '-', ''))::bit(64)::bigint $$;

-- Each order and refund row's revision: a new one at every write, whoever writes it. A constant default first, so
-- that adding the column rewrites none of a year's rows (they read 0); new rows then draw one.
ALTER TABLE orders ADD COLUMN revision bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ALTER COLUMN revision SET DEFAULT new_revision();
ALTER TABLE refunds ADD COLUMN revision bigint NOT NULL DEFAULT 0;
ALTER TABLE refunds ALTER COLUMN revision SET DEFAULT new_revision();

-- A writer that does not give a new revision (reproject, a person's SQL) gets one: the recorder gives its own, so
-- the trigger's condition, checked in C, spares it the call.
CREATE FUNCTION give_new_revision() RETURNS trigger
  LANGUAGE plpgsql
  AS $$ BEGIN NEW.revision := new_revision(); RETURN NEW; END $$;
CREATE TRIGGER orders_new_revision BEFORE UPDATE ON orders
  FOR EACH ROW WHEN (NEW.revision = OLD.revision) EXECUTE FUNCTION give_new_revision();
CREATE TRIGGER refunds_new_revision BEFORE UPDATE ON refunds
  FOR EACH ROW WHEN (NEW.revision = OLD.revision) EXECUTE FUNCTION give_new_revision();

-- Each recorder lane's last commit: a random token its next statement expects, so that a statement decided from
-- what the lane kept fails on a database that lost that commit (a promoted standby). A row per lane per process;
-- rows of lanes silent for a week go (the first write of each new lane deletes them).
CREATE TABLE recorder_lanes (
  lane        uuid        PRIMARY KEY,
  token       bigint      NOT NULL,
  written_at  timestamptz NOT NULL DEFAULT now()
);

-- The recording statement's last step: raises SQLSTATE PR001 unless every guard held, so that nothing of the
-- statement is written.
CREATE FUNCTION recording_guard(held boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  AS $$
BEGIN
  IF held IS NOT TRUE THEN
    RAISE EXCEPTION 'the recording statement was decided from a state the database no longer holds'
      USING ERRCODE = 'PR001';
  END IF;
  RETURN true;
END $$;
