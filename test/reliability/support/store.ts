import { query, testDatabase, type TestDatabase } from '../../support/database';

/** A database of the scenario's own, created empty (the service migrates it) and dropped at the end. */
export function scenarioDatabase(scenario: string): TestDatabase {
  return testDatabase(`nr_rel_${scenario}`);
}

export interface StoredCounts {
  notifications: number;
  quarantined: number;
  deliveries: number;
  variants: number;
  orders: number;
  refunds: number;
  events: number;
  pendingEvents: number;
}

export async function counts(url: string): Promise<StoredCounts> {
  const [row] = await query<Record<keyof StoredCounts, string>>(
    url,
    `SELECT (SELECT count(*) FROM notifications) AS notifications,
            (SELECT count(*) FROM quarantined_notifications) AS quarantined,
            (SELECT count(*) FROM deliveries) AS deliveries,
            (SELECT count(*) FROM notification_variants) AS variants,
            (SELECT count(*) FROM orders) AS orders,
            (SELECT count(*) FROM refunds) AS refunds,
            (SELECT count(*) FROM outbox_events) AS events,
            -- Waiting: above the relay's cursor, or held (docs/decisions/0023).
            (SELECT count(*) FROM outbox_events WHERE xid > (SELECT xid FROM outbox_cursor) AND published_at IS NULL) + (SELECT count(*) FROM outbox_held) AS "pendingEvents"`,
  );
  const result = {} as StoredCounts;
  for (const [key, value] of Object.entries(row ?? {})) result[key as keyof StoredCounts] = Number(value);
  return result;
}

/** Deliveries recorded per body (sha256 hex): each 200 must have written exactly one. */
export async function deliveriesByBody(url: string): Promise<Map<string, number>> {
  const rows = await query<{ sha: string; n: string }>(
    url,
    `SELECT encode(body_sha256, 'hex') AS sha, count(*) AS n FROM deliveries GROUP BY 1`,
  );
  return new Map(rows.map((r) => [r.sha, Number(r.n)]));
}

/** `kind|subject|status` of every recorded notification. */
export async function meanings(url: string): Promise<Set<string>> {
  const rows = await query<{ m: string }>(
    url,
    `SELECT kind || '|' || subject_id || '|' || status AS m FROM notifications`,
  );
  return new Set(rows.map((r) => r.m));
}

export interface RecordOfMeaning {
  meaning: string;
  /** Deliveries recorded for this notification. */
  deliveries: number;
  /** Outbox events written for it. */
  events: number;
}

/** One row per recorded notification with one of these meanings (`kind|subject|status`). */
export async function recordsOf(url: string, wanted: readonly string[]): Promise<RecordOfMeaning[]> {
  const rows = await query<{ meaning: string; deliveries: string; events: string }>(
    url,
    `SELECT n.kind || '|' || n.subject_id || '|' || n.status AS meaning,
            (SELECT count(*) FROM deliveries d WHERE d.notification_id = n.id) AS deliveries,
            (SELECT count(*) FROM outbox_events o
              WHERE (o.message::jsonb -> 'data' ->> 'notificationId') = n.id::text) AS events
       FROM notifications n
      WHERE n.kind || '|' || n.subject_id || '|' || n.status = ANY($1::text[])`,
    [wanted],
  );
  return rows.map((r) => ({ meaning: r.meaning, deliveries: Number(r.deliveries), events: Number(r.events) }));
}

/**
 * Sessions holding a session advisory lock (the outbox relay's, say) on this database; pg_locks
 * splits the bigint key: classid the high 32 bits, objid the low ones.
 */
export async function advisoryLockHolders(url: string, lockKey: number): Promise<number> {
  const [row] = await query<{ n: string }>(
    url,
    `SELECT count(*) AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1`,
    [lockKey],
  );
  return Number(row?.n ?? 0);
}

export interface OutboxRow {
  id: string;
  order_id: string;
  sequence: string;
  type: string;
  published: boolean;
}

/** Ids of the events not yet published: above the relay's cursor, or held (docs/decisions/0023). */
export async function pendingEventIds(url: string): Promise<Set<string>> {
  const rows = await query<{ id: string }>(
    url,
    `SELECT id::text FROM outbox_events WHERE xid > (SELECT xid FROM outbox_cursor) AND published_at IS NULL
     UNION SELECT event_id::text FROM outbox_held`,
  );
  return new Set(rows.map((r) => r.id));
}

export async function outbox(url: string): Promise<OutboxRow[]> {
  return query<OutboxRow>(
    url,
    `SELECT id::text, order_id, sequence::text, type,
            NOT EXISTS (SELECT 1 FROM outbox_held h WHERE h.event_id = e.id)
              AND (published_at IS NOT NULL OR xid <= (SELECT xid FROM outbox_cursor)) AS published
       FROM outbox_events e ORDER BY order_id, sequence`,
  );
}

// Ranks of the README's state rules, written here independently of src/recording/statusRules.ts.
const ORDER_RANK: Record<string, number> = { PENDING: 1, WAITING_FOR_CONFIRMATION: 2, COMPLETED: 3, CANCELED: 3 };
const REFUND_RANK: Record<string, number> = { PENDING: 1, FINALIZED: 2, CANCELED: 2 };

/**
 * "Nothing half-written": the invariants that hold between the tables after any set of committed
 * transactions. Returns the violations found (empty when consistent).
 */
export async function consistencyViolations(url: string): Promise<string[]> {
  const problems: string[] = [];
  const add = (what: string, rows: Array<Record<string, unknown>>): void => {
    if (rows.length > 0) problems.push(`${what}: ${rows.length} (e.g. ${JSON.stringify(rows.slice(0, 3))})`);
  };
  add(
    'notifications without a delivery',
    await query(
      url,
      'SELECT n.id FROM notifications n WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id)',
    ),
  );
  add(
    'quarantined bodies without a delivery',
    await query(
      url,
      'SELECT q.id FROM quarantined_notifications q WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.quarantine_id = q.id)',
    ),
  );
  add(
    'deliveries pointing nowhere',
    await query(url, 'SELECT id FROM deliveries WHERE notification_id IS NULL AND quarantine_id IS NULL'),
  );
  add(
    'applied or conflicting notifications without exactly one event',
    await query(
      url,
      `SELECT n.id, count(o.id) AS events FROM notifications n
         LEFT JOIN outbox_events o ON (o.message::jsonb -> 'data' ->> 'notificationId') = n.id::text
        WHERE n.outcome IN ('applied', 'conflict') GROUP BY n.id HAVING count(o.id) <> 1`,
    ),
  );
  add(
    'stale notifications with an event',
    await query(
      url,
      `SELECT n.id FROM notifications n JOIN outbox_events o ON (o.message::jsonb -> 'data' ->> 'notificationId') = n.id::text
        WHERE n.outcome = 'stale'`,
    ),
  );
  add(
    'events of no notification',
    await query(
      url,
      `SELECT o.id FROM outbox_events o
        WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id::text = o.message::jsonb -> 'data' ->> 'notificationId')`,
    ),
  );
  add(
    'orders whose event sequence is not 1..n or disagrees with event_streams',
    await query(
      url,
      `SELECT o.order_id, count(*) AS n, min(o.sequence) AS lo, max(o.sequence) AS hi, s.last_sequence
         FROM outbox_events o LEFT JOIN event_streams s USING (order_id)
        GROUP BY o.order_id, s.last_sequence
       HAVING min(o.sequence) <> 1 OR max(o.sequence) <> count(*) OR s.last_sequence IS DISTINCT FROM max(o.sequence)`,
    ),
  );
  add(
    'events whose stored sequence differs from their message',
    await query(
      url,
      `SELECT id FROM outbox_events WHERE (message::jsonb -> 'data' ->> 'sequence')::bigint <> sequence`,
    ),
  );

  // Each projection holds the highest-ranked status applied to it, and exists when one was applied.
  for (const [kind, table, key, ranks] of [
    ['order', 'orders', 'order_id', ORDER_RANK],
    ['refund', 'refunds', 'refund_id', REFUND_RANK],
  ] as const) {
    const applied = await query<{ subject_id: string; status: string }>(
      url,
      `SELECT subject_id, status FROM notifications WHERE kind = $1 AND outcome = 'applied'`,
      [kind],
    );
    const expected = new Map<string, string>();
    for (const { subject_id: subject, status } of applied) {
      const current = expected.get(subject);
      if (current === undefined || (ranks[status] ?? 0) > (ranks[current] ?? 0)) expected.set(subject, status);
    }
    const rows = await query<{ id: string; status: string }>(url, `SELECT ${key} AS id, status FROM ${table}`);
    const actual = new Map(rows.map((r) => [r.id, r.status]));
    const wrong: Array<Record<string, unknown>> = [];
    for (const [subject, status] of expected)
      if (actual.get(subject) !== status) wrong.push({ subject, expected: status, actual: actual.get(subject) });
    for (const [subject, status] of actual)
      if (!expected.has(subject)) wrong.push({ subject, expected: null, actual: status });
    add(`${table} projections not equal to their highest applied status`, wrong);
  }
  return problems;
}
