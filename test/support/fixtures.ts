import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { OrderEventData } from '../../src/outbox/cloudEvents';

/** Captured notifications (bodies byte-exact) with the keys that verify them; copied from shared/. */
export interface Fixture {
  id: string;
  kind: 'order' | 'refund';
  status: string | null;
  headers: Record<string, string>;
  body: string;
  secondKey: string | null;
  algorithm: string | null;
  signatureVerifies: boolean | null;
  note: string;
}

export const fixtures: Fixture[] = (
  JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', 'real-notifications.json'), 'utf8')) as {
    fixtures: Fixture[];
  }
).fixtures;

export function fixture(id: string): Fixture {
  const found = fixtures.find((f) => f.id === id);
  if (!found) throw new Error(`no fixture ${id}`);
  return found;
}

/** The signature header of a fixture, whichever spelling it carries. */
export function signatureHeaderOf(f: Fixture): string | undefined {
  return f.headers['OpenSvc-Signature'] ?? f.headers['X-OpenSvc-Signature'];
}

/** The data of EVENTS.md's order.completed example: what the contract tests build events from. */
export const COMPLETED_ORDER_DATA: OrderEventData = {
  orderId: 'PB68465GCH200213GUEST000P01',
  extOrderId: '5e45160711d81',
  merchantPosId: '300746',
  status: 'COMPLETED',
  previousStatus: 'PENDING',
  totalAmount: '15000',
  currencyCode: 'PLN',
  paymentId: '76258454',
  payMethodType: 'CARD_TOKEN',
  localReceiptDateTime: '2020-02-13T10:25:40.528+01:00',
  bookingTime: '2020-02-13T09:25:40.528Z',
  sequence: 2,
  notificationId: '2',
  observedVia: 'notification',
};
