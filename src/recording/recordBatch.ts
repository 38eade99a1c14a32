import type { Transaction } from '../database/transaction';
import { lockOrders, readState, stateOf, writeBatch, writeQuarantine, type WrittenRow } from './batchStatements';
import { decideBatch, meaningOf, type BatchDecision, type BatchItem, type BatchState } from './decideBatch';
import type { Delivery, Recorded, RecordingContext, RecordResult } from './notificationStore';

/**
 * A recording transaction, in the order it runs:
 *
 *   1. readBatchState: lock the batch's orders and read what it needs (two statements sent together);
 *   2. decideBatch (decideBatch.ts): the pure decision, every row to write and every answer;
 *   3. writeBatch: one statement that writes all of it, sent with COMMIT by the group commit
 *      (groupCommit.ts), which also decides when the batch runs and who waits for it.
 *
 * recordBatch runs the three in a transaction of the caller's (the tools: quarantine retry).
 */

/**
 * A refund was first recorded, under an order of its own, by a transaction that committed between this
 * one's lock and its read: that order is not locked. Rare; the batch runs again from the start.
 */
export class LockSetChanged extends Error {
  constructor() {
    super('a refund of the batch was recorded under an order the batch did not lock; run it again');
    this.name = 'LockSetChanged';
  }
}

const unique = <T>(values: Iterable<T>): T[] => [...new Set(values)];

/** Locks the orders of the items the cache did not know, and reads their state. */
export async function readBatchState(trx: Transaction, items: readonly BatchItem[]): Promise<BatchState> {
  const open = items.filter((item) => !item.known).map((item) => item.notification);
  const orderIds = unique(open.map((n) => n.orderId));
  const refundIds = unique(open.flatMap((n) => (n.kind === 'refund' ? [n.refundId] : [])));
  const meanings = [...new Map(open.map((n) => [meaningOf(n), n])).values()].map((n) => ({
    kind: n.kind,
    subjectId: n.kind === 'order' ? n.orderId : n.refundId,
    status: n.status,
  }));
  // The lock statement completes (the locks granted) before the read starts and takes its snapshot; both
  // leave at once.
  const [[locked], [row]] = await Promise.all([
    trx.run(lockOrders(orderIds, refundIds)),
    trx.run(readState(meanings, orderIds, refundIds)),
  ]);
  const state = stateOf(row);
  const lockedOrders = new Set(locked?.orders ?? []);
  for (const refund of state.refunds.values()) if (!lockedOrders.has(refund.orderId)) throw new LockSetChanged();
  return state;
}

/**
 * The answers, once the write told which variants it added: the first delivery of a variant not stored
 * before is a new variant (a concurrent batch may have added the same one first).
 */
export function settleVariants(decision: BatchDecision, written: WrittenRow | undefined): RecordResult[] {
  const added = new Set((written?.variants ?? []).map((v) => `${v.notification_id}:${v.body_sha256}`));
  return decision.results.map((result, index) => {
    const key = decision.variantKeys.get(index);
    return result.outcome === 'duplicate' && key !== undefined && added.delete(key)
      ? { ...result, newVariant: true }
      : result;
  });
}

/** Records notifications that arrived together in the caller's transaction; the caller commits. */
export async function recordBatch(
  trx: Transaction,
  context: RecordingContext,
  items: readonly BatchItem[],
): Promise<{ results: RecordResult[]; decision: BatchDecision }> {
  const decision = decideBatch(items, await readBatchState(trx, items), context.eventSource);
  const [written] = await trx.run(writeBatch(decision.writes));
  return { results: settleVariants(decision, written), decision };
}

/** Keeps an authentic body that could not be read or recorded, with the reason, for `quarantine retry` later. */
export async function recordQuarantine(
  trx: Pick<Transaction, 'run'>,
  delivery: Delivery,
  reason: string,
  detail: string,
): Promise<Recorded> {
  const [row] = await trx.run(writeQuarantine(delivery, reason, detail));
  return {
    outcome: 'quarantined',
    newVariant: false,
    notificationId: null,
    quarantineId: row?.id ?? null,
    eventsWritten: 0,
    currentStatus: null,
    posId: delivery.signers[0]?.posId ?? '',
    disagreements: [],
  };
}
