import { createHash } from 'node:crypto';
import { createLogger } from '../../src/observability/logger';
import type { Notification } from '../../src/parsing/notification';
import type { ApiAnswer, PaymentApi, RetrievedOrder, RetrievedRefund } from '../../src/paymentApi/paymentApi';
import type { NotificationStore, DeliveryAnswer } from '../../src/recording/notificationStore';
import { meaningKey } from '../../src/recording/batch';
import { checkOrder } from '../../src/reconciliation/checkOrder';
import {
  hasRefunds,
  orderObservation,
  PAYMENT_API_FINGERPRINT,
  posToAsk,
  refundObservations,
} from '../../src/reconciliation/observations';
import {
  afterCheck,
  delayAfterChecks,
  firstCheckAt,
  schedulePolicy,
  unavailableBackoff,
} from '../../src/reconciliation/schedule';
import { Retries } from '../../src/domain/backoff';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('reconciliation schedule', () => {
  const policy = schedulePolicy(5 * MINUTE, 7 * DAY);
  const observedAt = new Date('2026-11-25T08:00:00Z');

  it('When an order is open, then its first check is RECONCILE_AFTER after its last observation', () => {
    expect(firstCheckAt(observedAt, policy)).toEqual(new Date('2026-11-25T08:05:00Z'));
  });

  it('When checks find it still open, then the gaps double up to the widest gap', () => {
    const gaps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((checks) => delayAfterChecks(checks, policy));
    expect(gaps.slice(0, 4)).toEqual([10 * MINUTE, 20 * MINUTE, 40 * MINUTE, 80 * MINUTE]);
    expect(Math.max(...gaps)).toBe(6 * HOUR);
    expect(gaps).toEqual([...gaps].sort((a, b) => a - b));
  });

  it('When the schedule is followed, then it ends with one check at the give-up time and then gives up', () => {
    let at = firstCheckAt(observedAt, policy);
    const checks: Date[] = [];
    for (let n = 1; n < 1000; n++) {
      checks.push(at);
      const next = afterCheck(observedAt, n, at, policy);
      if (next.givenUp) break;
      expect(next.nextCheckAt.getTime()).toBeGreaterThan(at.getTime());
      at = next.nextCheckAt;
    }
    expect(checks.at(-1)).toEqual(new Date(observedAt.getTime() + 7 * DAY));
    expect(checks.length).toBeGreaterThan(10);
    expect(checks.length).toBeLessThan(60);
  });

  it('When the API asked to wait longer than the schedule, then the next check waits that long', () => {
    const next = afterCheck(observedAt, 1, firstCheckAt(observedAt, policy), policy, 2 * HOUR);
    expect(next).toEqual({ givenUp: false, nextCheckAt: new Date('2026-11-25T10:05:00Z') });
  });

  it('When RECONCILE_AFTER is short (a test), then the widest gap is never below it', () => {
    const short = schedulePolicy(1000, 60_000);
    expect(delayAfterChecks(1, short)).toBe(2000);
    expect(short.maxDelayMs).toBe(15_000);
  });

  it.each([
    [1, null, 60_000],
    [2, null, 120_000],
    [20, null, 300_000],
    [1, 90_000, 90_000],
  ])(
    'When %i rounds in a row found the API unavailable (Retry-After %p), then the sweep pauses %i ms',
    (failed, retryAfter, expected) => {
      const rounds = new Retries(unavailableBackoff(30_000));
      const waits = Array.from({ length: failed }, () => rounds.next(retryAfter ?? 0));
      expect(waits.at(-1)).toBe(expected);
    },
  );
});

describe('which POS asks', () => {
  it.each<[string | undefined, string | undefined, string[], ReturnType<typeof posToAsk>]>([
    ['300746', undefined, ['300746', '145227'], { posId: '300746' }],
    ['300746', '300746', ['300746', '145227'], { posId: '300746' }],
    ['300746', '145227', ['300746', '145227'], { problem: 'pos_mismatch' }],
    [undefined, '145227', ['300746', '145227'], { posId: '145227' }],
    [undefined, undefined, ['300746'], { posId: '300746' }],
    [undefined, undefined, ['300746', '145227'], { problem: 'pos_required' }],
    [undefined, '999999', ['300746'], { problem: 'unknown_pos' }],
  ])('When the owner is %p and %p is asked for among %j, then %j', (owner, requested, configured, expected) => {
    expect(posToAsk(owner, requested, configured)).toEqual(expected);
  });
});

describe('what the API says, as observations', () => {
  const order: RetrievedOrder = {
    orderId: 'ORDER1',
    extOrderId: 'ext-1',
    merchantPosId: '300746',
    status: 'COMPLETED',
    totalAmount: '15000',
    currencyCode: 'PLN',
    paymentId: '5000001',
    payMethodType: 'CARD_TOKEN',
    orderCreateDate: null,
  };
  const answer = <T>(value: T, text: string): ApiAnswer<T> => ({
    body: Buffer.from(text),
    value,
    correlationId: null,
  });

  it('When the API shows a completed order, then it is the order notification of that meaning, with its payment method, vouched for by the asking POS, with the answer as its body', () => {
    const observed = orderObservation('300746', answer(order, '{"orders":[]}'));
    expect(observed?.notification).toEqual({
      kind: 'order',
      orderId: 'ORDER1',
      extOrderId: 'ext-1',
      merchantPosId: '300746',
      status: 'COMPLETED',
      totalAmount: '15000',
      currencyCode: 'PLN',
      paymentId: '5000001',
      payMethodType: 'CARD_TOKEN',
      localReceiptDateTime: null,
    });
    expect(observed?.delivery).toEqual({
      observedVia: 'reconciliation',
      body: Buffer.from('{"orders":[]}'),
      bodySha256: createHash('sha256').update('{"orders":[]}').digest(),
      signers: [{ posId: '300746', keyFingerprint: PAYMENT_API_FINGERPRINT }],
      sourceAddress: null,
      processingTimeMs: null,
    });
  });

  it('When the API shows NEW, then there is nothing to record', () => {
    expect(orderObservation('300746', answer({ ...order, status: 'NEW' }, '{}'))).toBeNull();
    expect(hasRefunds({ ...order, status: 'PENDING' })).toBe(false);
    expect(hasRefunds(order)).toBe(true);
  });

  it('When the API lists refunds, then each is a refund notification under the order', () => {
    const refund: RetrievedRefund = {
      refundId: 'R1',
      extRefundId: null,
      amount: '4500',
      currencyCode: 'PLN',
      status: 'FINALIZED',
      statusDateTime: '2026-11-25T09:00:00.000+01:00',
      creationDateTime: null,
      statusError: null,
    };
    const [observed] = refundObservations('300746', order, answer([refund], '{"refunds":[]}'));
    expect(observed?.notification).toMatchObject({
      kind: 'refund',
      orderId: 'ORDER1',
      refundId: 'R1',
      status: 'FINALIZED',
    });
    expect(observed?.delivery.observedVia).toBe('reconciliation');
  });
});

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
