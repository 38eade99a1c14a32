import type { Transaction } from '../database/transaction';
import { meaningOf, NOTHING_READ, type BatchDecision, type BatchItem, type BatchState } from './batch';
import { batchRows, deliveryRows, guardsOf, historyLookups, stateOf, withStoredNotifications } from './batchRows';
import {
  lockOrders,
  planHistoryReadWithItsValues,
  readHistory,
  readState,
  writeBatch,
  writeDeliveries,
  writeQuarantine,
  type LaneLink,
} from './batchQueries';
import { decideBatch } from './decideBatch';
import type { Delivery, DeliveryKept } from './notificationStore';
import type { RecordingContext } from './projectionFold';
import type { RecorderLane } from './recorderLane';

/**
 * The recording transaction: the service's recorder (recorder.ts) and the command line (quarantine
 * retry) both record through recordBatch, in the order it runs:
 *
 *   1. the state: what the lane kept of the batch's orders when it can be decided from that (the fast path,
 *      docs/decisions/0024), or readBatchState: lock the batch's orders and read what it needs; nothing when
 *      every item is a known repeat;
 *   2. decideBatch (decideBatch.ts): the pure decision, every row to write and every answer;
 *   3. the caller's beforeWrite, which may still abandon the batch (throw) or add statements of its own;
 *   4. the write: one statement with every row (batchQueries.ts), guarded: it fails whole (GuardFailed) when a
 *      row is not as the state had it. Sent with COMMIT after a read; alone, its own transaction, on the fast
 *      path and for a batch of known repeats, which writes only their deliveries (transaction.ts).
 *
 * Step 1 is two statements sent together (lock, then read the projections, where each status recorded is
 * found), and a third, a read of the history of the repeats among them, only when there are some.
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

/**
 * The write was decided from a state the database no longer holds (docs/decisions/0024): another replica or
 * `reproject` wrote one of its orders, or the database lost the lane's last commit (a failover). Nothing of it was
 * written; the batch runs again at once, by the reading path.
 */
export class GuardFailed extends Error {
  constructor() {
    super('the batch was decided from a state the database no longer holds; run it again');
    this.name = 'GuardFailed';
  }
}

/** The SQLSTATE of recording_guard (sql/025). */
const GUARD_FAILED = 'PR001';

export interface RecordingSteps {
  /** Runs once the decision is made, before the write: throws to abandon the batch, or adds statements. */
  beforeWrite?(decision: BatchDecision): void | Promise<void>;
  /** How long the write and its COMMIT may take, asked when they leave (ms; unbounded when absent). */
  writeTimeoutMs?(): number;
  /** The recorder lane's chain and kept state: a batch it can decide without reading is one statement. */
  lane?: RecorderLane;
}

/** A write outside any lane (the command line's): it expects no token and reserves no ids. */
const NO_LANE: LaneLink = { lane: null, expected: null, token: '0', begins: false, idCount: 0 };

const unique = <T>(values: Iterable<T>): T[] => [...new Set(values)];

/** Records notifications that arrived together, and commits: the write is the transaction's last statement. */
export async function recordBatch(
  trx: Transaction,
  context: RecordingContext,
  items: readonly BatchItem[],
  steps: RecordingSteps = {},
): Promise<BatchDecision> {
  const { lane } = steps;
  if (items.every((item) => item.known)) {
    const decision = decideBatch(items, NOTHING_READ, context);
    await steps.beforeWrite?.(decision);
    await trx.runAndCommit(writeDeliveries(deliveryRows(decision.writes.deliveries)), steps.writeTimeoutMs?.());
    return decision;
  }
  const kept = lane?.stateFor(items) ?? null;
  const state = kept ?? dated(lane, await readBatchState(trx, items));
  const decision = decideBatch(items, state, context);
  await steps.beforeWrite?.(decision);
  const link = lane?.link(kept !== null, decision.writes.newNotifications.length) ?? NO_LANE;
  const write = writeBatch(batchRows(decision.writes), guardsOf(state, decision.writes), link);
  try {
    const sentAt = Date.now();
    const [answer] = await trx.runAndCommit(write, steps.writeTimeoutMs?.());
    if (answer) lane?.committed(state, decision.writes, link, answer, sentAt);
  } catch (error) {
    if (!isGuardFailure(error)) {
      lane?.broken();
      throw error;
    }
    lane?.broken(items.map((item) => item.notification.orderId));
    throw new GuardFailed();
  }
  return decision;
}

/** A read's state as its lane dates it (RecorderLane.dated); outside any lane, as read. */
const dated = (lane: RecorderLane | undefined, state: BatchState): BatchState => (lane ? lane.dated(state) : state);

const isGuardFailure = (error: unknown): boolean =>
  error instanceof Error && 'code' in error && error.code === GUARD_FAILED;

/**
 * Locks the orders of the items the cache did not know and reads their state; then, for those whose status was
 * recorded before, their history (a third statement, only then).
 */
async function readBatchState(trx: Transaction, items: readonly BatchItem[]): Promise<BatchState> {
  const open = items.filter((item) => !item.known).map((item) => item.notification);
  if (open.length === 0) return NOTHING_READ;
  const orderIds = unique(open.map((n) => n.orderId));
  const refundIds = unique(open.flatMap((n) => (n.kind === 'refund' ? [n.refundId] : [])));
  const meanings = new Set(open.map(meaningOf)).size;
  // The lock statement completes (the locks granted) before the read starts and takes its snapshot; both
  // leave at once.
  const [[locked], [row]] = await Promise.all([
    trx.run(lockOrders(orderIds, refundIds)),
    trx.run(readState(orderIds, refundIds, meanings)),
  ]);
  const state = stateOf(row);
  const lockedOrders = new Set(locked?.orders ?? []);
  for (const { projection } of state.refunds.values())
    if (!lockedOrders.has(projection.orderId)) throw new LockSetChanged();
  const refs = historyLookups(open, state);
  if (refs.length === 0) return state;
  const [, history] = await Promise.all([trx.run(planHistoryReadWithItsValues), trx.run(readHistory(refs))]);
  return withStoredNotifications(state, refs, history);
}

/** Keeps an authentic body that could not be read or recorded, with the reason, for `quarantine retry` later. */
export async function recordQuarantine(
  trx: Pick<Transaction, 'runAndCommit'>,
  delivery: Delivery,
  reason: string,
  detail: string,
): Promise<DeliveryKept> {
  const [row] = await trx.runAndCommit(writeQuarantine(delivery, reason, detail));
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
