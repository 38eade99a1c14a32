import { sql, type Transaction } from 'kysely';
import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import type { Db } from './database';
import { recordBatchIn } from './recordBatch';
import { kyselySession } from './sqlSession';
import type { Database, DeliveryOutcome } from './schema';

type Trx = Transaction<Database>;

/** One delivery attempt that passed verification. */
export interface Delivery {
  body: Buffer;
  bodySha256: Buffer;
  posId: string;
  keyFingerprint: string;
  sourceAddress: string | null;
  /** Svc-Processing-Time header: milliseconds the sender spent before its first attempt. */
  processingTimeMs: number | null;
}

export interface RecordResult {
  outcome: DeliveryOutcome;
  /** A repeat with the same meaning but body bytes not seen before. */
  newVariant: boolean;
  notificationId: string | null;
  quarantineId: string | null;
  /** Events written to the outbox in this transaction. */
  eventsWritten: number;
  /** For stale and conflict outcomes: the status the projection keeps. */
  currentStatus: string | null;
}

export interface RecordingContext {
  eventSource: string;
}

async function insertDelivery(
  trx: Trx,
  delivery: Delivery,
  outcome: DeliveryOutcome,
  refs: { notificationId?: string; quarantineId?: string },
): Promise<void> {
  await trx
    .insertInto('deliveries')
    .values({
      source_address: delivery.sourceAddress,
      processing_time_ms: delivery.processingTimeMs,
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body_sha256: delivery.bodySha256,
      outcome,
      notification_id: refs.notificationId ?? null,
      quarantine_id: refs.quarantineId ?? null,
    })
    .execute();
}

/** Records one verified notification inside the caller's transaction (see recordBatchIn). */
export async function recordNotificationIn(
  trx: Trx,
  context: RecordingContext,
  delivery: Delivery,
  notification: Notification,
): Promise<RecordResult> {
  const [result] = (await recordBatchIn(kyselySession(trx), context, [{ delivery, notification }])).results;
  return result as RecordResult;
}

/** Keeps an authentic body that could not be read, with the reason, for `quarantine retry` later. */
export async function recordQuarantineIn(
  trx: Trx,
  delivery: Delivery,
  reason: QuarantineReason,
  detail: string,
): Promise<RecordResult> {
  const row = await trx
    .insertInto('quarantined_notifications')
    .values({
      reason,
      detail,
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body: delivery.body,
      body_sha256: delivery.bodySha256,
    })
    // The same bytes again: one quarantine row, one more delivery. (No-op update to get the id back.)
    .onConflict((oc) => oc.column('body_sha256').doUpdateSet({ body_sha256: sql.raw('excluded.body_sha256') }))
    .returning('id')
    .executeTakeFirstOrThrow();
  await insertDelivery(trx, delivery, 'quarantined', { quarantineId: row.id });
  return {
    outcome: 'quarantined',
    newVariant: false,
    notificationId: null,
    quarantineId: row.id,
    eventsWritten: 0,
    currentStatus: null,
  };
}

export function recordQuarantine(
  db: Db,
  delivery: Delivery,
  reason: QuarantineReason,
  detail: string,
): Promise<RecordResult> {
  return db.transaction().execute((trx) => recordQuarantineIn(trx, delivery, reason, detail));
}
