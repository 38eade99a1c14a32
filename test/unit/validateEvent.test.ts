import { checkEvent, CONTRACT_VERSION } from '../../examples/consumer/src/validateEvent';
import { buildEvent, type OrderEventData, type RefundEventData } from '../../src/outbox/cloudEvents';
import { COMPLETED_ORDER_DATA } from '../support/fixtures';

/** The validator published with the events (examples/consumer): accepts what a later 1.x adds, refuses the rest. */

const orderData: OrderEventData = {
  ...COMPLETED_ORDER_DATA,
  disagreements: [{ field: 'totalAmount', kept: '15000', received: '99900' }],
};
const refundData: RefundEventData = {
  orderId: 'PB68465GCH200213GUEST000P01',
  extOrderId: null,
  merchantPosId: '300746',
  refundId: '912128',
  amount: '500',
  currencyCode: 'PLN',
  orderCurrencyCode: 'PLN',
  status: 'FINALIZED',
  previousStatus: null,
  statusDateTime: null,
  refundDate: null,
  bookingTime: '2026-11-02T10:00:00.000Z',
  reason: null,
  reasonDescription: null,
  sequence: 3,
  notificationId: '3',
  observedVia: 'reconciliation',
};

type Json = Record<string, unknown> & { data: Record<string, unknown> };
const event = (): Json =>
  JSON.parse(JSON.stringify(buildEvent('urn:payment-notification-receiver', 'order.completed', orderData, new Date())));
const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

describe('the example consumer validator', () => {
  it('When the service publishes an event, then it is valid and typed', () => {
    const checked = checkEvent('order.completed', body(event()));
    expect(checked.outcome).toBe('valid');
    const refund = buildEvent('urn:payment-notification-receiver', 'refund.finalized', refundData, new Date());
    expect(checkEvent('refund.finalized', body(refund)).outcome).toBe('valid');
    expect(CONTRACT_VERSION).toMatch(/^1\./);
  });

  it('When a later 1.x adds fields to the envelope, the data and a disagreement, then the event is still valid', () => {
    const later = event();
    later.traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    later.data.captureBy = '2026-12-01T00:00:00Z';
    later.data.disagreements = [{ field: 'totalAmount', kept: '15000', received: '99900', notifiedAt: '2026-11-28' }];
    expect(checkEvent('order.completed', body(later))).toMatchObject({ outcome: 'valid' });
  });

  it.each<[string, (e: Json) => void]>([
    ['a required field left out', (e) => delete e.data.sequence],
    ['an amount as a number', (e) => (e.data.totalAmount = 15000)],
    ['another major version', (e) => (e.dataschema = 'urn:payment-notification-receiver:events:v2:order')],
    ['a status its type does not carry', (e) => (e.data.status = 'CANCELED')],
    ['a type other than its routing key', (e) => (e.type = 'order.canceled')],
  ])('When an event has %s, then it is invalid (a poison message)', (_what, mutate) => {
    const e = event();
    mutate(e);
    expect(checkEvent('order.completed', body(e)).outcome).toBe('invalid');
  });

  it('When an event has no dataschema (published before 1.1.0), then it is read as 1.0 and valid', () => {
    const old = event();
    delete old.dataschema;
    const checked = checkEvent('order.completed', body(old));
    expect(checked).toMatchObject({
      outcome: 'valid',
      event: { dataschema: 'urn:payment-notification-receiver:events:v1:order' },
    });
    const refund: Json = JSON.parse(
      JSON.stringify(buildEvent('urn:payment-notification-receiver', 'refund.finalized', refundData, new Date())),
    );
    delete refund.dataschema;
    expect(checkEvent('refund.finalized', body(refund)).outcome).toBe('valid');
  });

  it('When a message is not JSON, then it is invalid; when its type is unknown, it is a type added later', () => {
    expect(checkEvent('order.completed', Buffer.from('{"no'))).toEqual({
      outcome: 'invalid',
      problems: ['the body is not JSON'],
    });
    expect(checkEvent('order.shipped', body(event()))).toEqual({ outcome: 'unknown_type', type: 'order.shipped' });
  });
});
