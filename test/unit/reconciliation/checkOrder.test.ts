import { createLogger } from '../../../src/observability/logger';
import type { Notification } from '../../../src/parsing/notification';
import type { PaymentApi, RetrievedOrder, RetrievedRefund } from '../../../src/paymentApi/paymentApi';
import type { NotificationStore, DeliveryAnswer } from '../../../src/recording/notificationStore';
import { meaningKey } from '../../../src/recording/batch';
import { checkOrder } from '../../../src/reconciliation/checkOrder';

describe('one check, with the API and the recorder faked', () => {
  const order: RetrievedOrder = {
    orderId: 'ORDER2',
    extOrderId: null,
    merchantPosId: '300746',
    status: 'COMPLETED',
    totalAmount: '100',
    currencyCode: 'PLN',
    paymentId: '1',
    payMethodType: null,
    orderCreateDate: null,
  };
  const api = (answered: RetrievedOrder, refunds: RetrievedRefund[] = []): PaymentApi => ({
    retrieveOrder: () => Promise.resolve({ body: Buffer.from('{}'), value: answered, correlationId: null }),
    listRefunds: () => Promise.resolve({ body: Buffer.from('[]'), value: refunds, correlationId: null }),
  });
  const recording = (outcome: DeliveryAnswer['outcome']) => {
    const recorded: Notification[] = [];
    const store: NotificationStore = {
      record: (_delivery, notification) => {
        recorded.push(notification);
        return Promise.resolve(
          outcome === 'refused'
            ? { outcome, reason: 'pos_mismatch' }
            : {
                outcome,
                newVariant: false,
                notificationId: '1',
                quarantineId: null,
                eventsWritten: outcome === 'accepted' ? 1 : 0,
                currentStatus: null,
                posId: '300746',
                disagreements: [],
              },
        );
      },
      quarantine: () => Promise.reject(new Error('not used')),
    };
    return { store, recorded };
  };
  const logger = createLogger('silent');

  it('When the answer names another POS than the one that asked, then it is refused and nothing is recorded', async () => {
    const { store, recorded } = recording('accepted');
    const check = await checkOrder(
      { api: api({ ...order, merchantPosId: '145227' }), store, logger },
      'ORDER2',
      '300746',
    );
    expect(check.result).toBe('pos_mismatch');
    expect(recorded).toEqual([]);
  });

  it('When a dry run asks, then it says what the API says and records nothing', async () => {
    const { store, recorded } = recording('accepted');
    const check = await checkOrder({ api: api(order), store, logger }, 'ORDER2', '300746', { dryRun: true });
    expect(check).toMatchObject({ result: 'unchanged', said: [{ kind: 'order', status: 'COMPLETED' }], final: true });
    expect(recorded).toEqual([]);
  });

  it.each<[DeliveryAnswer['outcome'], string]>([
    ['accepted', 'repaired'],
    ['duplicate', 'unchanged'],
    ['stale', 'unchanged'],
    ['conflict', 'unchanged'],
    ['refused', 'pos_mismatch'],
  ])('When the recorder answers %s, then the check is %s', async (outcome, result) => {
    const { store, recorded } = recording(outcome);
    const check = await checkOrder({ api: api(order), store, logger }, 'ORDER2', '300746');
    expect(check.result).toBe(result);
    expect(recorded.map((n) => n.status)).toEqual(['COMPLETED']);
  });

  it('When every status the API says is recorded already, then nothing goes to the recorder: no delivery row', async () => {
    const { store, recorded } = recording('duplicate');
    const refund: RetrievedRefund = {
      refundId: 'R1',
      extRefundId: null,
      amount: '50',
      currencyCode: 'PLN',
      status: 'FINALIZED',
      statusDateTime: null,
      creationDateTime: null,
      statusError: null,
    };
    const known = new Set([meaningKey('order', 'ORDER2', 'COMPLETED'), meaningKey('refund', 'R1', 'FINALIZED')]);
    const check = await checkOrder(
      { api: api(order, [refund]), store, logger, recorded: () => Promise.resolve(known) },
      'ORDER2',
      '300746',
    );
    expect(check).toMatchObject({ result: 'unchanged', applied: [], stale: [], conflicts: [] });
    expect(recorded).toEqual([]);

    const partly = await checkOrder(
      { api: api(order, [refund]), store, logger, recorded: () => Promise.resolve(new Set([[...known][0] as string])) },
      'ORDER2',
      '300746',
    );
    expect(partly.result).toBe('unchanged');
    expect(recorded.map((n) => `${n.kind} ${n.status}`)).toEqual(['refund FINALIZED']);
  });
});
