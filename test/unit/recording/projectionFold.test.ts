import { createHash } from 'node:crypto';
import { rebuildPage, type HistoryEntry } from '../../../src/recording/reprojection';
import { emptyRows, seedOrder, type SeedSettings } from '../../../src/seeding/seededOrders';
import type { Notification } from '../../../src/parsing/notification';
import { NOTHING_READ, stateAfter } from '../../../src/recording/batch';
import { orderWriteRow, refundWriteRow } from '../../../src/recording/batchRows';
import { decideBatch } from '../../../src/recording/decideBatch';
import * as projection from '../../../src/recording/projection';
import { seededRandom } from '../../../src/simulator/random';
import { parseNotification } from '../../../src/parsing/parseNotification';
import type { DomainEvent, RefundEventData } from '../../../src/outbox/cloudEvents';
import { ProjectionFold } from '../../../src/recording/projectionFold';
import { orderBody, refundBody } from '../../support/signing';

// One way from a notification to its rows and its projection (issue 39): the recorder (decideBatch), the history
// seeder (seedOrder, through the recorder's decision) and `reproject` (rebuildPage) share one fold.

const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-11-20T12:00:00Z');
const SETTINGS: SeedSettings = {
  posId: '300746',
  keyFingerprint: 'abcdefabcdef',
  eventSource: 'urn:test',
  paymentServiceTimeZone: 'Europe/Warsaw',
  nowMs: NOW,
  bodiesFromMs: null,
  outboxFromMs: NOW - 7 * DAY_MS,
  scheduleFromMs: NOW - 7 * DAY_MS,
};

/** A few orders' history as the seeder writes it. */
function seed(orders: number) {
  const random = seededRandom(39);
  let next = 1n;
  const rows = emptyRows();
  for (let i = 0; i < orders; i++)
    seedOrder(SETTINGS, random, NOW - 3 * DAY_MS + i * 60_000, () => String(next++), rows);
  return rows;
}

/** The seeded notifications as reproject reads them back: by order, in arrival order. */
const historyOf = (rows: ReturnType<typeof seed>): HistoryEntry[] =>
  rows.notifications
    .map((n) => ({
      id: n.id,
      order_id: n.order_id,
      parsed: JSON.parse(JSON.stringify(n.parsed)),
      pos_id: n.pos_id,
      at: n.received_at,
    }))
    .sort((a, b) => (a.order_id === b.order_id ? Number(a.id) - Number(b.id) : a.order_id < b.order_id ? -1 : 1));

const withoutTimes = <R extends { created_at: string; updated_at: string }>({
  created_at: _c,
  updated_at: _u,
  ...row
}: R) => row;

/** The recorder's decision on one delivery of each notification, each its own batch, as the service commits them. */
function record(notifications: readonly Notification[]) {
  let state = NOTHING_READ;
  const writes = [];
  for (const [i, notification] of notifications.entries()) {
    const body = Buffer.from(JSON.stringify(notification));
    const delivery = {
      observedVia: 'notification' as const,
      body,
      bodySha256: createHash('sha256').update(body).digest(),
      signers: [{ posId: SETTINGS.posId, keyFingerprint: SETTINGS.keyFingerprint }],
      sourceAddress: null,
      processingTimeMs: null,
    };
    state = { ...state, newIds: [String(i + 1)], now: new Date(NOW + i).toISOString() };
    const decision = decideBatch([{ delivery, notification }], state, SETTINGS);
    writes.push(decision.writes);
    state = stateAfter(state, decision.writes);
  }
  return writes;
}

describe('one fold from notifications to projections', () => {
  it('When reproject reads back the history the seeder wrote through the recorder, then it rebuilds the same projections and recorded statuses', () => {
    const rows = seed(300);
    expect(rows.refunds.length).toBeGreaterThan(0);
    const rebuilt = rebuildPage(historyOf(rows), new Map(rows.owners.map((o) => [o.order_id, o.pos_id])));
    expect(rebuilt.unreadable).toEqual([]);
    const byId =
      <R extends { order_id?: string }>(key: (r: R) => string) =>
      (a: R, b: R) =>
        key(a).localeCompare(key(b));
    expect([...rebuilt.orders.values()].map(orderWriteRow).sort(byId((r) => r.order_id))).toEqual(
      rows.orders.map(withoutTimes).sort(byId((r) => r.order_id)),
    );
    expect([...rebuilt.refunds.values()].map(refundWriteRow).sort(byId((r) => r.refund_id))).toEqual(
      rows.refunds.map(withoutTimes).sort(byId((r) => r.refund_id)),
    );
  });

  it('When one rule of the fold is changed, then the recorder, the seeder and reproject all follow it', () => {
    const applyOrder = projection.applyOrder;
    // The rule swapped: every applied order takes a payment method of its own.
    const spy = jest.spyOn(projection, 'applyOrder').mockImplementation((current, n, owner) => {
      const t = applyOrder(current, n, owner);
      return { ...t, projection: { ...t.projection, payMethodType: 'SWAPPED' } };
    });
    try {
      const rows = seed(20);
      expect(new Set(rows.orders.map((o) => o.pay_method_type))).toEqual(new Set(['SWAPPED']));

      const orders = rows.notifications.flatMap((n) => (n.parsed.kind === 'order' ? [n.parsed] : []));
      const recorded = record(orders).flatMap((w) => w.orders);
      expect(recorded.length).toBeGreaterThan(0);
      expect(new Set(recorded.map((o) => o.projection.payMethodType))).toEqual(new Set(['SWAPPED']));

      const rebuilt = rebuildPage(historyOf(rows), new Map());
      expect(new Set([...rebuilt.orders.values()].map((o) => o.projection.payMethodType))).toEqual(
        new Set(['SWAPPED']),
      );
    } finally {
      spy.mockRestore();
    }
    expect(seed(20).orders.some((o) => o.pay_method_type !== 'SWAPPED')).toBe(true);
  });
});

// What a refund event says of its order (issue 55): the order's POS and currency, so that a ledger per POS needs no
// join to the order.

const parsed = (body: string): Notification => {
  const result = parseNotification(Buffer.from(body));
  if (!result.ok) throw new Error(result.detail);
  return result.notification;
};

let ids = 0;
const BOOKING = { recordedAt: new Date('2026-11-02T11:00:00.000Z'), timeZone: 'Europe/Warsaw' };
const place = () => ({ id: String(++ids), at: '2026-11-02T11:00:00.000Z' });

function refundData(fold: ProjectionFold, body: string, ownerPosId: string): RefundEventData {
  const data = fold.fold(parsed(body), ownerPosId, place()).eventData(1, 'notification', BOOKING);
  if (!('refundId' in data)) throw new Error('not a refund event');
  return data;
}

describe('a refund event', () => {
  it('When its order is known, then it carries the order’s POS and currency beside its own amount', () => {
    const fold = new ProjectionFold();
    fold.fold(parsed(orderBody({ orderId: 'R-1', status: 'COMPLETED', currencyCode: 'EUR' })), 'pos-a', place());
    const data = refundData(
      fold,
      refundBody({ orderId: 'R-1', refundId: 'F-1', status: 'FINALIZED', currencyCode: 'EUR' }),
      'pos-a',
    );
    expect(data).toMatchObject({
      merchantPosId: 'pos-a',
      amount: '5000',
      currencyCode: 'EUR',
      orderCurrencyCode: 'EUR',
    });
  });

  it('When no notification of its order came yet, then the POS it is bound to, and no order currency', () => {
    const data = refundData(
      new ProjectionFold(),
      refundBody({ orderId: 'R-2', refundId: 'F-2', status: 'PENDING' }),
      'pos-b',
    );
    expect(data).toMatchObject({ merchantPosId: 'pos-b', orderCurrencyCode: null });
  });
});

describe('an event’s booking time', () => {
  const dataOf = (body: string): DomainEvent['data'] =>
    new ProjectionFold().fold(parsed(body), 'pos-a', place()).eventData(1, 'notification', BOOKING);

  it('When an order completes with a local receipt time without an offset, then it is read in the set zone', () => {
    const data = dataOf(
      orderBody({ orderId: 'B-1', status: 'COMPLETED', localReceiptDateTime: '2026-07-02T12:00:00' }),
    );
    expect(data.bookingTime).toBe('2026-07-02T10:00:00.000Z');
  });

  it('When the order has no time of the payment service’s own, then it is when the service recorded it', () => {
    expect(dataOf(orderBody({ orderId: 'B-2', status: 'PENDING' })).bookingTime).toBe('2026-11-02T11:00:00.000Z');
  });

  it('When a refund is finalized, then it is its refund date, as an instant', () => {
    const data = dataOf(refundBody({ orderId: 'B-3', refundId: 'F-3', status: 'FINALIZED' }));
    expect(data.bookingTime).toBe('2026-11-02T10:59:59.000Z');
  });
});
