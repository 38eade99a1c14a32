import type { PooledTransactions } from '../database/transaction';
import { parseNotification } from '../parsing/parseNotification';
import { signersFor } from '../verification/posBinding';
import type { Delivery, DeliveryKept } from './notificationStore';
import type { RecordingContext } from './projectionFold';
import { firstDeliveryOfQuarantined, lockQuarantined, resolveQuarantined } from './quarantineQueries';
import { recordBatch } from './recordBatch';

/**
 * Reprocessing a quarantined notification (after a fix to the parser): the one way, which the command line's
 * `quarantine retry` and the console's retry actions both call.
 */

export type RetryResult =
  | {
      id: string;
      result: 'recorded';
      /** The order it concerns (for a refund, the order the refund belongs to). */
      orderId: string;
      outcome: string;
      notificationId: string | null;
      eventsWritten: number;
    }
  | { id: string; result: 'still_unreadable'; reason: string; detail: string }
  | {
      id: string;
      result: 'not_found' | 'already_resolved' | 'body_purged' | 'pos_mismatch' | 'failed';
      detail: string;
    };

/**
 * Reads one quarantined body again; if it now parses, records it as a live delivery would be (through the
 * recorder, with the POS checks of receipt) and marks the row resolved, both in one transaction. Otherwise
 * leaves the row as it is.
 */
export async function retryOne(
  transactions: PooledTransactions,
  id: string,
  context: RecordingContext,
): Promise<RetryResult> {
  return transactions.transaction(async (trx): Promise<RetryResult> => {
    const [row] = await trx.run(lockQuarantined(id));
    if (!row) return { id, result: 'not_found', detail: 'no quarantined notification with this id' };
    if (row.resolved_at !== null) return { id, result: 'already_resolved', detail: row.resolution ?? '' };
    if (row.body === null)
      return { id, result: 'body_purged', detail: 'the body was purged (retention); it cannot be read again' };
    const parsed = parseNotification(row.body);
    if (!parsed.ok) return { id, result: 'still_unreadable', reason: parsed.reason, detail: parsed.detail };
    const n = parsed.notification;
    // The receiver checks this after parsing; a body it could not parse never got the check.
    const signers = signersFor(
      [{ posId: row.pos_id, keyFingerprint: row.key_fingerprint }],
      n.kind === 'order' ? n.merchantPosId : null,
    );
    if (signers.length === 0) {
      return {
        id,
        result: 'pos_mismatch',
        detail: `order.merchantPosId is not POS ${row.pos_id}, whose key verified it`,
      };
    }
    const [original] = await trx.run(firstDeliveryOfQuarantined(id));
    const delivery: Delivery = {
      body: row.body,
      bodySha256: row.body_sha256,
      signers,
      sourceAddress: original?.source_address ?? null,
      processingTimeMs: original?.processing_time_ms ?? null,
      observedVia: 'notification',
    };
    const resolve = (recorded: DeliveryKept) =>
      trx.run(
        resolveQuarantined(
          id,
          `reprocessed: ${recorded.outcome}${recorded.notificationId ? ` as notification ${recorded.notificationId}` : ''}`,
        ),
      );
    // Recorded and resolved in one transaction: the resolution leaves before the write and its COMMIT.
    const {
      results: [recorded],
    } = await recordBatch(trx, context, [{ delivery, notification: n }], {
      beforeWrite: async ({ results: [decided] }) => {
        if (decided && decided.outcome !== 'refused') await resolve(decided);
      },
    });
    if (!recorded || recorded.outcome === 'refused') {
      return { id, result: 'pos_mismatch', detail: `the order belongs to another POS than ${row.pos_id}` };
    }
    return {
      id,
      result: 'recorded',
      orderId: n.orderId,
      outcome: recorded.outcome,
      notificationId: recorded.notificationId,
      eventsWritten: recorded.eventsWritten,
    };
  });
}
