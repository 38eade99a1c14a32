import type { StatusTransition } from '../domain/outcomes';
import type { OrderStatus, RefundStatus } from '../parsing/notification';

/**
 * Status projections never move backwards (spec, "States and transitions"; "Events" delivery rule 4):
 *   order:  NEW < PENDING < WAITING_FOR_CONFIRMATION < COMPLETED | CANCELED
 *   refund: PENDING < FINALIZED | CANCELED
 * The final statuses share the highest rank, so "rank goes up" is the whole rule for applying. It is
 * applied here only, in the batch decision; concurrent deliveries of one order cannot both commit what they
 * decided from the same state: the write changes the order's row only at the revision it was decided from, or
 * fails whole (docs/decisions/0024); the reading path also holds the order's advisory lock (lockOrders in
 * batchQueries.ts). The database stores status_rank with the projection and writes what it is given.
 */
export const ORDER_STATUS_RANK: Readonly<Record<OrderStatus | 'NEW', number>> = {
  NEW: 0,
  PENDING: 1,
  WAITING_FOR_CONFIRMATION: 2,
  COMPLETED: 3,
  CANCELED: 3,
};

export const REFUND_STATUS_RANK: Readonly<Record<RefundStatus, number>> = {
  PENDING: 1,
  FINALIZED: 2,
  CANCELED: 2,
};

const FINAL_STATUSES: ReadonlySet<string> = new Set(['COMPLETED', 'CANCELED', 'FINALIZED']);

/**
 * The transition of a status seen for the first time (src/domain/outcomes.ts): applied, the projection moves
 * to it; stale, it would move backwards or out of a final status (recorded, ignored); conflict, one final
 * status after another (recorded, ignored, raised for a human).
 */
export function decideTransition(
  ranks: Readonly<Record<string, number>>,
  current: string | null,
  incoming: string,
): StatusTransition {
  const incomingRank = ranks[incoming];
  if (incomingRank === undefined) throw new Error(`unknown status ${incoming}`);
  if (current === null) return 'applied';
  const currentRank = ranks[current];
  if (currentRank === undefined) throw new Error(`unknown status ${current}`);
  if (FINAL_STATUSES.has(current)) {
    return FINAL_STATUSES.has(incoming) && incoming !== current ? 'conflict' : 'stale';
  }
  return incomingRank > currentRank ? 'applied' : 'stale';
}

export const decideOrderTransition = (current: OrderStatus | null, incoming: OrderStatus): StatusTransition =>
  decideTransition(ORDER_STATUS_RANK, current, incoming);

export const decideRefundTransition = (current: RefundStatus | null, incoming: RefundStatus): StatusTransition =>
  decideTransition(REFUND_STATUS_RANK, current, incoming);
