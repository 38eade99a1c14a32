import { sql } from 'kysely';
import type pg from 'pg';
import { columnListOf, columnsOf, tableOf, type Column, type Table } from '../database/columns';
import type { Db } from '../database/pool';
import { statement } from '../database/transaction';
import type { Day } from '../partitions/partitionDays';

/** The history seeder's statements: the days it fills, the ids it reserves, the rows it copies in, the statistics. */

/** A table the seeder writes, with its columns: the recorder's lists (batchRows.ts) and the times. */
export interface SeedTable<Row, T extends Table = Table> {
  table: T;
  columns: ReadonlyArray<keyof Row & Column<T>>;
}

/** A seeding thread's connection: no JIT, which would only slow its short statements. */
export async function prepareSeedConnection(client: pg.Client): Promise<void> {
  await client.query('SET jit = off');
}

/**
 * `work` (a chunk's COPYs) in a transaction of its own, committed without waiting for the WAL's flush: a chunk
 * lost to a crash is seeded again, and the intake's commits keep their durability.
 */
export async function inSeedTransaction<T>(client: pg.Client, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL synchronous_commit = off');
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** `COPY table (columns) FROM STDIN`: the text pg-copy-streams sends the rows after. */
export const copyInto = <Row, T extends Table>(target: SeedTable<Row, T>): string =>
  statement(sql`COPY ${tableOf(target.table)} (${columnListOf(target.table, target.columns)}) FROM STDIN`).sql;

/** Makes the partitions of the days from `first` to `last` (sql/007). */
export async function makeSeedDays(db: Db, first: Day, last: Day): Promise<void> {
  await sql`SELECT history_partitions_ensure(${first}::date, ${last}::date)`.execute(db);
}

const purged = columnsOf('history_bodies_purged');

/** Records the days from `first` to `last` as purged of their bodies, as the maintainer would have left them. */
export async function markDaysPurged(db: Db, first: Day, last: Day): Promise<void> {
  await sql`
    INSERT INTO ${tableOf('history_bodies_purged')} (${purged('day')})
    SELECT generate_series(${first}::date, ${last}::date, interval '1 day')::date
    ON CONFLICT (${purged('day')}) DO NOTHING`.execute(db);
}

/** Reserves `count` ids of the recorder's sequence at once (unused ones are gaps); answers the first. */
export async function reserveNotificationIds(db: Db, count: bigint): Promise<bigint> {
  const { rows } = await sql<{ last: string }>`
    SELECT setval('notification_ids', nextval('notification_ids') + ${String(count)}::bigint - 1)::text AS last`.execute(
    db,
  );
  return BigInt(rows[0]?.last ?? '0') - count + 1n;
}

/** The projections' statistics, as autovacuum would have kept them; it analyzes the day partitions itself. */
export async function analyzeProjections(db: Db): Promise<void> {
  const tables: Table[] = [
    'orders',
    'refunds',
    'order_owners',
    'event_streams',
    'outbox_events',
    'reconciliation_checks',
  ];
  await sql`ANALYZE ${sql.join(tables.map(tableOf))}`.execute(db);
}
