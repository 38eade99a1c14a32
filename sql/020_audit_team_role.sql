-- Downstream teams read the event feed and replay into their own queues with tokens of their own
-- (EVENT_TEAM_TOKENS, issue 56): the audit trail records a replay as the team's, in the role `team`.
-- The old rows all hold a console role or none, so the new check is not validated against them: no scan of a
-- year of audit rows, and no writer waits on one.
ALTER TABLE console_audit
  DROP CONSTRAINT console_audit_role_check,
  ADD CONSTRAINT console_audit_role_check CHECK (role IN ('viewer', 'operator', 'team')) NOT VALID;
