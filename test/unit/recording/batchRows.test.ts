import type { Notification } from '../../../src/parsing/notification';
import { meaningOf, NOTHING_READ, type BatchState } from '../../../src/recording/batch';
import { historyLookups, withStoredNotifications } from '../../../src/recording/batchRows';
import type { OrderProjection } from '../../../src/recording/projection';

const AT = '2026-11-20T08:00:00.000001+00:00';
const pending: Notification = {
  kind: 'order',
  orderId: 'O1',
  extOrderId: null,
  merchantPosId: 'A',
  status: 'PENDING',
  totalAmount: '100',
  currencyCode: 'PLN',
  paymentId: null,
  payMethodType: null,
  localReceiptDateTime: null,
};
const completed: Notification = { ...pending, status: 'COMPLETED' };
const { kind: _kind, ...projection } = pending;

const state: BatchState = {
  ...NOTHING_READ,
  orders: new Map([
    ['O1', { projection: projection satisfies OrderProjection, recorded: { PENDING: { id: '7', at: AT } } }],
  ]),
};

describe('the statuses recorded, found through the projections', () => {
  it('When a projection recorded a status, then a repeat of it points at its notification and day; a new status does not', () => {
    expect(historyLookups([pending, completed, pending], state)).toEqual([
      { meaning: meaningOf(pending), id: '7', at: AT },
    ]);
  });

  it('When history still holds the notification, then it is a stored notification with its digest, variants and delivery rows', () => {
    const refs = historyLookups([pending], state);
    const { storedNotifications } = withStoredNotifications(state, refs, [
      { id: '7', body_sha256: 'ab', variants: ['cd'], delivery_rows: 3 },
    ]);
    expect(storedNotifications.get(meaningOf(pending))).toEqual({
      id: '7',
      receivedAt: AT,
      bodySha256: Buffer.from('ab', 'hex'),
      variants: new Set(['cd']),
      deliveryRows: 3,
    });
  });

  it('When retention removed the notification, then there is no record: the status is recorded again', () => {
    const refs = historyLookups([pending], state);
    expect(withStoredNotifications(state, refs, []).storedNotifications.size).toBe(0);
  });
});
