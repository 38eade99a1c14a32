import type { BatchItem, BatchState, BatchWrites } from './batch';
import type { OrderProjection, RefundProjection } from './projection';
import type { StoredProjection } from './projectionFold';

/**
 * What a recorder lane keeps of the orders it recently read or wrote, so that a batch of them is decided without
 * reading (docs/decisions/0024): each order's projection with its recorded statuses, its owner, its last event
 * sequence, its refunds, and each row's revision, as the lane's last commit of the order left them. Bounded by
 * RECORDER_KEPT_ORDERS, the least recently used going first. Nothing here is trusted: the write checks every
 * revision it was decided from, and fails whole when one moved (another replica, `reproject`, a failover).
 */

interface KeptRefund {
  refund: StoredProjection<RefundProjection>;
  revision: string;
}

interface KeptOrder {
  order: StoredProjection<OrderProjection>;
  revision: string;
  owner: string | undefined;
  lastSequence: number | undefined;
  /** Its refunds (those recorded under it), by refund id. */
  refunds: Map<string, KeptRefund>;
}

/**
 * The heap an order kept takes, its refunds' included: 776-818 B in the memory mode (`npm run bench -- --memory`,
 * 2026-12-04), rounded up. The start's warning about the heap reads it (src/config/warnings.ts).
 */
export const KEPT_ORDER_HEAP_BYTES = 820;

/**
 * The first status of an order: one of an order not kept is taken for an order the database has never seen (its
 * write inserts the rows, and fails where they are there).
 */
const FIRST_ORDER_STATUS = 'PENDING';

export class KeptOrders {
  /** In least recently used order: a touched order is moved to the end, the first one goes past the capacity. */
  private readonly orders = new Map<string, KeptOrder>();
  /** The order each kept refund was recorded under. */
  private readonly refundOrders = new Map<string, string>();
  /**
   * Orders the lane bound to their POS or counted events of without a projection (a refund that came before them):
   * not new to the database, so their PENDING is not taken for their first status. Least recently used first, as
   * many as `capacity`.
   */
  private readonly unprojected = new Set<string>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.orders.size;
  }

  /**
   * The state a read would answer for the batch, from what is kept, or null when one of its items needs a read: an
   * order neither kept nor begun by the batch (its first status, PENDING, earlier in it or in this item, unless the
   * lane wrote the order's owner or stream without a projection: a refund came first), a status its
   * projection recorded (its history is to read), a refund of such an order. A refund not kept, of any status, is
   * taken for new (its write inserts it, and fails where it is there, under any order). Ids and the time are the
   * caller's (the lane's chain).
   */
  stateFor(items: readonly BatchItem[], newIds: readonly string[], now: string): BatchState | null {
    if (this.capacity <= 0) return null;
    const orders = new Map<string, KeptOrder>();
    /** Orders the batch takes for new: their first status came in it. */
    const begun = new Set<string>();
    for (const { notification: n, known } of items) {
      if (known) continue;
      const kept = this.orders.get(n.orderId);
      if (kept) orders.set(n.orderId, kept);
      else if (n.kind === 'order' && n.status === FIRST_ORDER_STATUS && !this.unprojected.has(n.orderId))
        begun.add(n.orderId);
      else if (!begun.has(n.orderId)) return null;
      if (n.kind === 'order') {
        if (kept?.order.recorded[n.status] !== undefined) return null;
        continue;
      }
      const under = this.refundOrders.get(n.refundId);
      const holder = under === undefined ? undefined : this.orders.get(under);
      const refund = holder?.refunds.get(n.refundId);
      if (holder && refund) {
        if (refund.refund.recorded[n.status] !== undefined) return null;
        orders.set(holder.order.projection.orderId, holder);
      }
    }
    return stateOfKept([...orders.values()], newIds, now);
  }

  /**
   * After a commit: what the batch's state and its write leave of each order (the revisions the write answered),
   * kept as the most recently used.
   */
  keep(state: BatchState, writes: BatchWrites, given: Given): void {
    if (this.capacity <= 0) return;
    const orders = new Map(state.orders);
    for (const written of writes.orders) orders.set(written.projection.orderId, written);
    const refunds = new Map(state.refunds);
    for (const written of writes.refunds) refunds.set(written.projection.refundId, written);
    const owners = new Map(state.owners);
    for (const { orderId, posId } of writes.owners) owners.set(orderId, posId);
    const sequences = new Map(state.sequences);
    for (const { orderId, lastSequence } of writes.sequences) sequences.set(orderId, lastSequence);
    for (const orderIds of [owners.keys(), sequences.keys()])
      for (const orderId of orderIds) {
        if (orders.has(orderId)) continue;
        this.unprojected.delete(orderId);
        this.unprojected.add(orderId);
      }
    for (const [orderId, order] of orders) {
      const revision = given.orders.get(orderId) ?? state.revisions.orders.get(orderId);
      if (revision === undefined) continue;
      this.unprojected.delete(orderId);
      const previous = this.orders.get(orderId);
      this.orders.delete(orderId);
      this.orders.set(orderId, {
        order,
        revision,
        owner: owners.get(orderId),
        lastSequence: sequences.get(orderId),
        refunds: previous?.refunds ?? new Map<string, KeptRefund>(),
      });
    }
    for (const [refundId, refund] of refunds) {
      const revision = given.refunds.get(refundId) ?? state.revisions.refunds.get(refundId);
      const holder = this.orders.get(refund.projection.orderId);
      if (revision === undefined || !holder) continue;
      holder.refunds.set(refundId, { refund, revision });
      this.refundOrders.set(refundId, refund.projection.orderId);
    }
    while (this.orders.size > this.capacity) {
      const oldest = this.orders.keys().next().value;
      if (oldest === undefined) break;
      this.forgetOrder(oldest);
    }
    while (this.unprojected.size > this.capacity) {
      const oldest = this.unprojected.values().next().value;
      if (oldest === undefined) break;
      this.unprojected.delete(oldest);
    }
  }

  /** The batch's orders were not as kept (a guard failed): their next batch reads them. */
  forget(orderIds: Iterable<string>): void {
    for (const orderId of orderIds) this.forgetOrder(orderId);
  }

  /** A failover, or a writer outside the recorder: nothing kept is trusted any more. */
  clear(): void {
    this.orders.clear();
    this.refundOrders.clear();
    this.unprojected.clear();
  }

  private forgetOrder(orderId: string): void {
    const kept = this.orders.get(orderId);
    if (!kept) return;
    for (const refundId of kept.refunds.keys()) this.refundOrders.delete(refundId);
    this.orders.delete(orderId);
  }
}

/** The revisions a write gave, by order and refund id. */
export interface Given {
  orders: ReadonlyMap<string, string>;
  refunds: ReadonlyMap<string, string>;
}

/** A batch's state from kept orders: what the reading path's read would have answered for them. */
function stateOfKept(kept: readonly KeptOrder[], newIds: readonly string[], now: string): BatchState {
  const refunds = kept.flatMap((k) => [...k.refunds]);
  return {
    storedNotifications: new Map(),
    orders: new Map(kept.map((k) => [k.order.projection.orderId, k.order])),
    refunds: new Map(refunds.map(([id, r]) => [id, r.refund])),
    owners: new Map(kept.flatMap((k) => (k.owner === undefined ? [] : [[k.order.projection.orderId, k.owner]]))),
    sequences: new Map(
      kept.flatMap((k) => (k.lastSequence === undefined ? [] : [[k.order.projection.orderId, k.lastSequence]])),
    ),
    newIds,
    now,
    revisions: {
      orders: new Map(kept.map((k) => [k.order.projection.orderId, k.revision])),
      refunds: new Map(refunds.map(([id, r]) => [id, r.revision])),
    },
  };
}
