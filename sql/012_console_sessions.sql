-- The admin port's doors (issue 45): console sessions held in the database, failed sign-ins counted for every
-- replica, and an audit trail that coalesces what repeats and records every path an action takes.

-- A signed-in person. The cookie holds a random id; only its SHA-256 is stored, so reading this table opens no
-- session. Every console request reads its row by that key (one index lookup) and compares the name, role and
-- token fingerprint with the configuration of the replica it reached: sign-out, removal and demotion end it at
-- once, everywhere. last_seen_at is written at most once a minute per session (the idle timeout's clock).
CREATE TABLE console_sessions (
  id_hash           bytea       PRIMARY KEY,
  name              text        NOT NULL,
  role              text        NOT NULL CHECK (role IN ('viewer', 'operator')),
  -- Which token signed in (a 64-bit fingerprint, never the token): a replaced token ends its sessions.
  token_fingerprint text        NOT NULL,
  source_address    inet,
  created_at        timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL
);
-- A name's sessions (the cap per name, "end all sessions of this name", the page of who is signed in).
CREATE INDEX console_sessions_by_name ON console_sessions (name, created_at);
-- Ended sessions are deleted by the history maintainer's round.
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- Failed sign-ins per source address and minute, read before any token is checked: past the limits the source
-- (or everyone, past the total) gets 429 without a check, on every replica alike. A few rows a minute; rows of
-- past minutes are deleted as new ones are written.
CREATE TABLE console_sign_in_failures (
  minute   timestamptz NOT NULL,
  source   text        NOT NULL,
  failures integer     NOT NULL,
  PRIMARY KEY (minute, source)
);

-- The audit trail records where an action came from (the console, the admin API, the command line) and, for
-- what repeats (sign-ins of one name, refused and throttled sign-ins of one source), one row per interval with a
-- count: coalesce_key names the interval's row, and a repeat adds to its count and moves last_at.
ALTER TABLE console_audit
  ADD COLUMN via text NOT NULL DEFAULT 'console' CHECK (via IN ('console', 'api', 'command line')),
  ADD COLUMN source_address inet,
  ADD COLUMN count integer NOT NULL DEFAULT 1 CHECK (count >= 1),
  ADD COLUMN last_at timestamptz,
  ADD COLUMN coalesce_key text;
CREATE UNIQUE INDEX console_audit_coalesced ON console_audit (coalesce_key) WHERE coalesce_key IS NOT NULL;
-- The audit page's filters, newest first: by person, by action (by order: console_audit_by_order).
CREATE INDEX console_audit_by_actor ON console_audit (actor, id);
CREATE INDEX console_audit_by_action ON console_audit (action, id);
