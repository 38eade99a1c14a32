import { createDb } from '../../../src/database/pool';
import { PooledTransactions } from '../../../src/database/transaction';
import type { OrderNotification, RefundNotification } from '../../../src/parsing/notification';
import { Recorder } from '../../../src/recording/recorder';
import type { KeptStateResult } from '../../../src/recording/recorderLane';
import { repairOrder } from '../../../src/recording/reprojectionQueries';
import { query } from '../../support/database';
import { deliveryOf, orderNotification, refundNotification } from '../../support/notifications';
import { startTestService, type TestService } from '../../support/service';
import { uniqueId } from '../../support/signing';

// Batches decided from kept state, one statement each (docs/decisions/0024), on the real database through the
// recorder: one test for each way the kept state can be wrong. After each, the answers, the projection, the events
// and their order per order are what the reading path gives: the kept state is never trusted, only checked.

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false', RECORDER_KEPT_ORDERS: '0' } });
});
afterAll(() => svc.stop());

/** A replica's recorder, keeping the state of its orders; `results` is how each of its batches was recorded. */
function replica(): {
  recorder: Recorder;
  results: KeptStateResult[];
  record(n: OrderNotification | RefundNotification): Promise<string>;
} {
  const results: KeptStateResult[] = [];
  const recorder = new Recorder(
    new PooledTransactions(svc.service.pool),
    { eventSource: 'urn:test', paymentServiceTimeZone: 'Europe/Warsaw' },
    {
      maxBatchSize: 16,
      lanes: 1,
      maxQueued: 100,
      maxWaitMs: 5000,
      answerWithinMs: 6000,
      keptOrders: 1000,
      onKeptState: (result) => results.push(result),
    },
  );
  return {
    recorder,
    results,
    record: async (n) => (await recorder.record(deliveryOf(), n)).outcome,
  };
}

/** A lane's first batch reads (its chain begins); this one makes the next batches eligible for kept state. */
async function warmed(): Promise<ReturnType<typeof replica>> {
  const r = replica();
  await r.record(orderNotification(uniqueId('WARM'), 'PENDING'));
  r.results.length = 0;
  return r;
}

/** An order as the database holds it: its status, its stream's last number, and its events' numbers in order. */
async function stored(
  orderId: string,
): Promise<{ status: string | null; last: string | null; events: string[]; notifications: number }> {
  const [row] = await query<{ status: string | null; last: string | null }>(
    svc.database.url,
    `SELECT (SELECT status FROM orders WHERE order_id = $1) AS status,
            (SELECT last_sequence::text FROM event_streams WHERE order_id = $1) AS last`,
    [orderId],
  );
  const events = await query<{ sequence: string }>(
    svc.database.url,
    'SELECT sequence::text FROM outbox_events WHERE order_id = $1 ORDER BY created_at, sequence',
    [orderId],
  );
  const [count] = await query<{ n: number }>(
    svc.database.url,
    'SELECT count(*)::int AS n FROM notifications WHERE order_id = $1',
    [orderId],
  );
  return {
    status: row?.status ?? null,
    last: row?.last ?? null,
    events: events.map((e) => e.sequence),
    notifications: count?.n ?? 0,
  };
}

describe('kept state', () => {
  it('When an order is kept, then its next batches are decided without a read, and the database holds what the reading path gives', async () => {
    const a = await warmed();
    const orderId = uniqueId('KEPT');
    expect(await a.record(orderNotification(orderId, 'PENDING'))).toBe('accepted');
    expect(await a.record(orderNotification(orderId, 'WAITING_FOR_CONFIRMATION'))).toBe('accepted');
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(await a.record(orderNotification(orderId, 'PENDING'))).toBe('duplicate');
    // The first status of an order not kept is taken for new; the later ones are of a kept order; the repeat of a
    // recorded status needs its history, which only a read finds.
    expect(a.results).toEqual(['kept', 'kept', 'kept', 'read']);
    expect(await stored(orderId)).toEqual({
      status: 'COMPLETED',
      last: '3',
      events: ['1', '2', '3'],
      notifications: 3,
    });
  });

  it('When another replica wrote a kept order, then the guard fails, and the batch is recorded again from what the database holds', async () => {
    const [a, b] = [await warmed(), await warmed()];
    const orderId = uniqueId('TWO');
    await a.record(orderNotification(orderId, 'PENDING'));
    expect(await b.record(orderNotification(orderId, 'WAITING_FOR_CONFIRMATION'))).toBe('accepted');
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({
      status: 'COMPLETED',
      last: '3',
      events: ['1', '2', '3'],
      notifications: 3,
    });
  });

  it('When a kept order went back to an older revision (a failover), then the guard fails and nothing of the batch is written twice', async () => {
    const a = await warmed();
    const orderId = uniqueId('BACK');
    await a.record(orderNotification(orderId, 'PENDING'));
    // A promoted standby holds the row as an earlier commit left it: another revision.
    await query(svc.database.url, 'UPDATE orders SET revision = 0 WHERE order_id = $1', [orderId]);
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({ status: 'COMPLETED', last: '2', events: ['1', '2'], notifications: 2 });
  });

  it('When a kept order is gone (a failover lost it), then the guard fails and the batch is recorded as the reading path records it', async () => {
    const a = await warmed();
    const orderId = uniqueId('GONE');
    await a.record(orderNotification(orderId, 'PENDING'));
    // All that its commit wrote is gone, as on a promoted standby that never received it.
    await query(
      svc.database.url,
      `WITH d AS (DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE order_id = $1)),
            n AS (DELETE FROM notifications WHERE order_id = $1),
            e AS (DELETE FROM outbox_events WHERE order_id = $1),
            s AS (DELETE FROM event_streams WHERE order_id = $1),
            w AS (DELETE FROM order_owners WHERE order_id = $1)
       DELETE FROM orders WHERE order_id = $1`,
      [orderId],
    );
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    // As on a database that never had the PENDING: the order begins at COMPLETED, its stream at 1.
    expect(await stored(orderId)).toEqual({ status: 'COMPLETED', last: '1', events: ['1'], notifications: 1 });
  });

  it("When the database lost the lane's last commit (a failover), then a batch of new orders fails its guard and takes ids the database gives", async () => {
    const a = await warmed();
    // The promoted standby has no trace of the lane's last commit: not its token, so not the ids it reserved.
    await query(svc.database.url, 'DELETE FROM recorder_lanes');
    const orderId = uniqueId('LANE');
    expect(await a.record(orderNotification(orderId, 'PENDING'))).toBe('accepted');
    expect(a.results).toEqual(['guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({ status: 'PENDING', last: '1', events: ['1'], notifications: 1 });
  });

  it('When an order taken for new exists (written by another replica, or before a restart), then the guard fails and its status is a duplicate', async () => {
    const [a, b] = [await warmed(), await warmed()];
    const orderId = uniqueId('EXISTS');
    await b.record(orderNotification(orderId, 'PENDING'));
    expect(await a.record(orderNotification(orderId, 'PENDING'))).toBe('duplicate');
    expect(a.results).toEqual(['guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({ status: 'PENDING', last: '1', events: ['1'], notifications: 1 });
  });

  it('When a refund taken for new exists under another order, then the guard fails and it is a duplicate there', async () => {
    const [a, b] = [await warmed(), await warmed()];
    const [orderX, orderY] = [uniqueId('RX'), uniqueId('RY')];
    const refundId = uniqueId('RF');
    await a.record(orderNotification(orderX, 'PENDING'));
    await b.record(orderNotification(orderY, 'PENDING'));
    expect(await b.record(refundNotification(orderY, refundId, 'PENDING'))).toBe('accepted');
    expect(await a.record(refundNotification(orderX, refundId, 'PENDING'))).toBe('duplicate');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    const [row] = await query<{ order_id: string }>(
      svc.database.url,
      'SELECT order_id FROM refunds WHERE refund_id = $1',
      [refundId],
    );
    expect(row?.order_id).toBe(orderY);
  });

  it("When a kept order's event stream moved without its row (a refund's event, by another replica), then the guard fails", async () => {
    const [a, b] = [await warmed(), await warmed()];
    const orderId = uniqueId('STREAM');
    await a.record(orderNotification(orderId, 'PENDING'));
    await b.record(orderNotification(orderId, 'PENDING'));
    const revision = async () =>
      (
        await query<{ revision: string }>(svc.database.url, 'SELECT revision::text FROM orders WHERE order_id = $1', [
          orderId,
        ])
      )[0]?.revision;
    const before = await revision();
    expect(await b.record(refundNotification(orderId, uniqueId('SR'), 'PENDING'))).toBe('accepted');
    // The refund's event counts in its order's stream; the order's row is not written.
    expect(await revision()).toBe(before);
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({
      status: 'COMPLETED',
      last: '3',
      events: ['1', '2', '3'],
      notifications: 3,
    });
  });

  it('When reproject rewrote a kept order, then the trigger gave it a new revision and the guard fails', async () => {
    const a = await warmed();
    const orderId = uniqueId('REPRO');
    await a.record(orderNotification(orderId, 'PENDING'));
    const db = createDb(svc.service.pool);
    const { kind: _kind, ...projection } = orderNotification(orderId, 'PENDING');
    await repairOrder(db, { projection, recorded: {} });
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'guard_failed', 'read']);
    expect(await stored(orderId)).toEqual({ status: 'COMPLETED', last: '2', events: ['1', '2'], notifications: 2 });
  });

  it("When a refund came before its order's first status, then that PENDING reads: the order is bound and counted already", async () => {
    const a = await warmed();
    const orderId = uniqueId('EARLY');
    // A reordered refund: no order row, but the order's owner and its stream are written with the refund's event.
    expect(await a.record(refundNotification(orderId, uniqueId('ER'), 'FINALIZED'))).toBe('accepted');
    expect(await a.record(orderNotification(orderId, 'PENDING'))).toBe('accepted');
    expect(a.results).not.toContain('guard_failed');
    expect(await stored(orderId)).toEqual({ status: 'PENDING', last: '2', events: ['1', '2'], notifications: 2 });
  });

  it('When a failover is noticed, then nothing kept is used: the next batch reads', async () => {
    const a = await warmed();
    const orderId = uniqueId('NOTICED');
    await a.record(orderNotification(orderId, 'PENDING'));
    a.recorder.forgetKeptState();
    expect(await a.record(orderNotification(orderId, 'COMPLETED'))).toBe('accepted');
    expect(a.results).toEqual(['kept', 'read']);
  });

  it('When many orders of one lane go through kept state at once, then each is recorded once, in order per order', async () => {
    const a = await warmed();
    const orders = Array.from({ length: 30 }, () => uniqueId('MANY'));
    for (const status of ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'] as const)
      expect(new Set(await Promise.all(orders.map((id) => a.record(orderNotification(id, status)))))).toEqual(
        new Set(['accepted']),
      );
    // A batch needing more ids than the last write reserved (twice its own new notifications, and 4) reads; none is
    // refused by a guard: nothing else writes these orders.
    expect(a.results).toContain('kept');
    expect(a.results).not.toContain('guard_failed');
    for (const id of orders)
      expect(await stored(id)).toEqual({ status: 'COMPLETED', last: '3', events: ['1', '2', '3'], notifications: 3 });
  });
});
