import { sql } from 'kysely';
import type { OutboxBacklog } from '../observability/metrics';
import type { Db } from '../database/pool';

/** Pending events and the creation time of the oldest, from the small partial index of pending rows. */
export async function readOutboxBacklog(db: Db): Promise<OutboxBacklog> {
  const row = await db
    .selectFrom('outbox_events')
    .select([sql<string>`count(*)`.as('pending'), sql<string | null>`extract(epoch from min(created_at))`.as('oldest')])
    .where('published_at', 'is', null)
    .executeTakeFirstOrThrow();
  return { pending: Number(row.pending), oldestCreatedAtSeconds: row.oldest === null ? 0 : Number(row.oldest) };
}
