import { sql } from 'kysely';
import type pg from 'pg';
import { columnsOf, tableOf } from '../database/columns';
import type { Db } from '../database/pool';
import type { FailoverCause, RecoveryState } from '../database/schema';
import { inTransaction, runOn, statement, type Statement } from '../database/transaction';

/**
 * The failover watch's and the recovery's reads and writes (database_watch, failovers: sql/018). The watch's run
 * on its own connection, once a second on every replica; the recovery's on its own small pool. Nothing here is on
 * the intake's path.
 */

/** The database server's identity: its system identifier and the timeline it writes on (a promotion starts a new one). */
export interface DatabaseIdentity {
  server: string;
  timeline: number;
}

/** What one beat found. */
export interface BeatRow {
  /** The beat this one moved the counter to. */
  beat: number;
  /** When the beat before it was written: where the database's history ended, as far as the watch can tell. */
  previousBeatAt: Date;
  /** The identity database_watch holds: what the service last knew (null before the first). */
  stored: DatabaseIdentity | null;
  /** The identity the server reports now; null where the role may not read it. */
  identity: DatabaseIdentity | null;
  /** The oldest failover whose recovery is not done, and whether the intake is to hold its writes for it. */
  recovery: { id: string; state: RecoveryState; holding: boolean } | null;
}

const watch = tableOf('database_watch');
const w = columnsOf('database_watch');
const p = columnsOf('database_watch', 'p');
const failovers = tableOf('failovers');
const f = columnsOf('failovers', 'f');

/**
 * The identity as SQL: pg_control_system() and the WAL functions are granted to PUBLIC by default, so an
 * application role reads them; the timeline is the first 8 hex digits of the current WAL file's name, which a
 * promotion changes at once (pg_control_checkpoint() would wait for the next checkpoint).
 */
const SERVER = sql<string>`(SELECT system_identifier::text FROM pg_control_system())`;
const TIMELINE = sql<number>`('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int`;

/** The identity, or null when the role may not read it (a managed database that revoked the functions). */
export async function readIdentity(client: pg.ClientBase): Promise<DatabaseIdentity | null> {
  try {
    const [row] = await runOn(
      client,
      statement(sql<DatabaseIdentity>`SELECT ${SERVER} AS server, ${TIMELINE} AS timeline`),
    );
    return row ?? null;
  } catch (error) {
    if ((error as { code?: unknown }).code === '42501') return null;
    throw error;
  }
}

type BeatResult = {
  beat: string;
  previous_beat_at: Date;
  stored_server: string | null;
  stored_timeline: number | null;
  server: string | null;
  timeline: number | null;
  recovery_id: string | null;
  recovery_state: RecoveryState | null;
  holding: boolean;
};

/**
 * One beat: moves the counter forward (every replica's beats share it, so each sees it only grow while the
 * database keeps what it acknowledged), answers what the row held before (the stored identity, when it last moved)
 * and the identity now, and the open recovery. The intake holds its writes while a recovery restores, for
 * `holdMs` at most from when it was noticed.
 */
const beatStatement = (withIdentity: boolean, holdMs: number): Statement<BeatResult> =>
  statement(
    sql<BeatResult>`
      WITH previous AS (
        SELECT ${w('beat')}, ${w('beat_at')}, ${w('server')}, ${w('timeline')} FROM ${watch} FOR UPDATE
      ), moved AS (
        UPDATE ${watch} SET ${w('beat')} = (SELECT ${w('beat')} FROM previous) + 1, ${w('beat_at')} = clock_timestamp()
        RETURNING ${w('beat')}
      ), open AS (
        SELECT ${f('id')}, ${f('state')}, ${f('noticed_at')} FROM ${failovers} f
         WHERE ${f('state')} <> 'done' ORDER BY ${f('id')} LIMIT 1
      )
      SELECT (SELECT ${w('beat')} FROM moved)::text AS beat, ${p('beat_at')} AS previous_beat_at,
             ${p('server')} AS stored_server, ${p('timeline')} AS stored_timeline,
             ${withIdentity ? SERVER : sql`NULL::text`} AS server,
             ${withIdentity ? TIMELINE : sql`NULL::int`} AS timeline,
             (SELECT ${columnsOf('failovers')('id')}::text FROM open) AS recovery_id,
             (SELECT ${columnsOf('failovers')('state')} FROM open) AS recovery_state,
             coalesce((SELECT ${columnsOf('failovers')('state')} = 'restoring'
                              AND ${columnsOf('failovers')('noticed_at')} > now() - ${holdMs}::int * interval '1 millisecond'
                         FROM open), false) AS holding
        FROM previous p`,
  );

const identityOf = (server: string | null, timeline: number | null): DatabaseIdentity | null =>
  server === null || timeline === null ? null : { server, timeline };

export async function beat(client: pg.ClientBase, withIdentity: boolean, holdMs: number): Promise<BeatRow> {
  const [row] = await runOn(client, beatStatement(withIdentity, holdMs));
  if (!row) throw new Error('database_watch has no row (sql/018 not applied?)');
  return {
    beat: Number(row.beat),
    previousBeatAt: row.previous_beat_at,
    stored: identityOf(row.stored_server, row.stored_timeline),
    identity: identityOf(row.server, row.timeline),
    recovery:
      row.recovery_id === null || row.recovery_state === null
        ? null
        : { id: row.recovery_id, state: row.recovery_state, holding: row.holding },
  };
}

/** Notes the identity the first time the service sees it (a new database, or one migrated before sql/018). */
export async function noteFirstIdentity(client: pg.ClientBase, identity: DatabaseIdentity): Promise<void> {
  await runOn(
    client,
    statement(sql`UPDATE ${watch} SET ${w('server')} = ${identity.server}, ${w('timeline')} = ${identity.timeline}
                   WHERE ${w('server')} IS NULL`),
  );
}

/** A failover as the watch noticed it. */
export interface NoticedFailover {
  cause: FailoverCause;
  previous: string;
  current: string;
  lastPoint: Date;
  identity: DatabaseIdentity | null;
}

/** How long after a failover's notice another replica's notice of a lost beat counts as the same, while restoring. */
const SAME_FAILOVER_MS = 60_000;

/**
 * Writes a failover once, whichever replica notices it first: under the lock of database_watch's row, a recovery
 * still open for the same identity (or, for a beat gone back, still restoring one noticed within a minute) is the
 * same failover, and its id is answered; otherwise the failover is written and the identity it moved to noted. Answers the failover's id
 * and whether this call wrote it.
 */
export async function recordFailover(
  client: pg.ClientBase,
  notice: NoticedFailover,
  replica: string,
): Promise<{ id: string; written: boolean }> {
  const fc = columnsOf('failovers');
  return inTransaction(client, async (trx) => {
    await trx.run(statement(sql`SELECT 1 FROM ${watch} FOR UPDATE`));
    const [open] = await trx.run(
      statement(
        sql<{ id: string; current_identity: string; restoring_lately: boolean }>`
          SELECT ${fc('id')}::text AS id, ${fc('current_identity')} AS current_identity,
                 ${fc('state')} = 'restoring'
                   AND ${fc('noticed_at')} > now() - ${SAME_FAILOVER_MS}::int * interval '1 millisecond'
                   AS restoring_lately
            FROM ${failovers} WHERE ${fc('state')} <> 'done' ORDER BY ${fc('id')} DESC LIMIT 1`,
      ),
    );
    // The same promotion, whatever its recovery's phase; the same lost beat only while it is still restored (a
    // loss after its restoration needs one of its own: a second restoration of the same finds everything recorded).
    if (open && (open.current_identity === notice.current || (notice.cause === 'beat' && open.restoring_lately)))
      return { id: open.id, written: false };
    const [row] = await trx.run(
      statement(
        sql<{ id: string }>`
          INSERT INTO ${failovers} (${fc('noticed_by')}, ${fc('cause')}, ${fc('previous_identity')},
                                    ${fc('current_identity')}, ${fc('last_point')})
          VALUES (${replica}, ${notice.cause}, ${notice.previous}, ${notice.current}, ${notice.lastPoint})
          RETURNING ${fc('id')}::text AS id`,
      ),
    );
    const identity = notice.identity;
    if (identity)
      await trx.run(
        statement(
          sql`UPDATE ${watch} SET ${w('server')} = ${identity.server}, ${w('timeline')} = ${identity.timeline}`,
        ),
      );
    if (!row) throw new Error('the failover was not written');
    return { id: row.id, written: true };
  });
}

/** A failover and its recovery, as the recovery and the console read it. */
export interface Failover {
  id: string;
  noticedAt: Date;
  noticedBy: string;
  cause: FailoverCause;
  previousIdentity: string;
  currentIdentity: string;
  lastPoint: Date;
  state: RecoveryState;
  journalRead: number;
  restored: number;
  alreadyRecorded: number;
  setAside: number;
  journalProblem: string | null;
  windowOrders: number | null;
  uncovered: number | null;
  restoredAt: Date | null;
  doneAt: Date | null;
}

const failoverColumns = [
  'id',
  'noticed_at',
  'noticed_by',
  'cause',
  'previous_identity',
  'current_identity',
  'last_point',
  'state',
  'journal_read',
  'restored',
  'already_recorded',
  'set_aside',
  'journal_problem',
  'window_orders',
  'uncovered',
  'restored_at',
  'done_at',
] as const;

type FailoverRow = {
  id: string;
  noticed_at: Date;
  noticed_by: string;
  cause: FailoverCause;
  previous_identity: string;
  current_identity: string;
  last_point: Date;
  state: RecoveryState;
  journal_read: number;
  restored: number;
  already_recorded: number;
  set_aside: number;
  journal_problem: string | null;
  window_orders: number | null;
  uncovered: number | null;
  restored_at: Date | null;
  done_at: Date | null;
};

const failoverOf = (row: FailoverRow): Failover => ({
  id: row.id,
  noticedAt: row.noticed_at,
  noticedBy: row.noticed_by,
  cause: row.cause,
  previousIdentity: row.previous_identity,
  currentIdentity: row.current_identity,
  lastPoint: row.last_point,
  state: row.state,
  journalRead: row.journal_read,
  restored: row.restored,
  alreadyRecorded: row.already_recorded,
  setAside: row.set_aside,
  journalProblem: row.journal_problem,
  windowOrders: row.window_orders,
  uncovered: row.uncovered,
  restoredAt: row.restored_at,
  doneAt: row.done_at,
});

/** The oldest failover whose recovery is not done (through failovers_open): what the recovery works on. */
export async function openFailover(db: Db): Promise<Failover | null> {
  const row = await db
    .selectFrom('failovers')
    .select(failoverColumns)
    .where('state', '<>', 'done')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row ? failoverOf(row) : null;
}

/** The latest failovers, newest first (needs attention, the overview). */
export async function latestFailovers(db: Db, limit: number): Promise<Failover[]> {
  const rows = await db.selectFrom('failovers').select(failoverColumns).orderBy('id', 'desc').limit(limit).execute();
  return rows.map(failoverOf);
}

/** What the read back of the journal did. */
export interface RestorationCounts {
  journalRead: number;
  restored: number;
  alreadyRecorded: number;
  setAside: number;
  journalProblem: string | null;
}

/** The restoration is over: its counts, and the recovery goes on to the window's reconciliation (writes go again). */
export async function markRestored(db: Db, id: string, counts: RestorationCounts): Promise<void> {
  await db
    .updateTable('failovers')
    .set({
      state: 'reconciling',
      journal_read: counts.journalRead,
      restored: counts.restored,
      already_recorded: counts.alreadyRecorded,
      set_aside: counts.setAside,
      journal_problem: counts.journalProblem,
      restored_at: sql`now()`,
    })
    .where('id', '=', id)
    .where('state', '=', 'restoring')
    .execute();
}

/** The orders of the window put to the payment API. */
export async function markWindowScheduled(db: Db, id: string, orders: number): Promise<void> {
  await db.updateTable('failovers').set({ window_orders: orders }).where('id', '=', id).execute();
}

/** The recovery is done: how many of the window's orders no check could settle. */
export async function markDone(db: Db, id: string, uncovered: number): Promise<void> {
  await db
    .updateTable('failovers')
    .set({ state: 'done', uncovered, done_at: sql`now()` })
    .where('id', '=', id)
    .execute();
}

/**
 * Of these notification ids, those a notification of the promoted database already has since `since` (one written
 * between the promotion and the notice, under an id the old primary had given to one it lost): a restoration
 * of those takes a new id. Reads the day partitions from `since` on only.
 */
export async function idsTaken(db: Db, ids: readonly string[], since: Date): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('notifications')
    .select(sql<string>`${columnsOf('notifications')('id')}::text`.as('id'))
    .where('received_at', '>=', since)
    .where('id', '=', sql<string>`ANY(${ids}::bigint[])`)
    .execute();
  return new Set(rows.map((r) => r.id));
}

/**
 * Moves the notification ids past any the old primary may have given before it died (its sequence's last state
 * the standby replayed is behind them): a restoration gives lost notifications their own ids again, and what is
 * recorded after takes ids above them. Answers false when the role may not (then restorations take new ids).
 */
export async function moveNotificationIdsPast(db: Db, by: number): Promise<boolean> {
  try {
    await sql`SELECT setval('notification_ids', nextval('notification_ids') + ${by}::bigint)`.execute(db);
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === '42501') return false;
    throw error;
  }
}

/** How the database replicates commits, as it reports it (the start report). */
export interface ReplicationMode {
  synchronousStandbyNames: string;
  synchronousCommit: string;
}

export async function readReplicationMode(db: Db): Promise<ReplicationMode> {
  const { rows } = await sql<ReplicationMode>`
    SELECT current_setting('synchronous_standby_names') AS "synchronousStandbyNames",
           current_setting('synchronous_commit') AS "synchronousCommit"`.execute(db);
  const [row] = rows;
  if (!row) throw new Error('no replication settings');
  return row;
}
