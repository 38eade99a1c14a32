import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseNotification } from '../../src/parsing/parseNotification';
import {
  buildLifecycle,
  buildTraffic,
  deliverWithRetries,
  formatLocalReceiptDateTime,
  notificationHeaders,
  PaymentServiceDouble,
  PlanError,
  RETRY_SCHEDULE_MS,
  runSimulation,
  scaledClock,
  seededRandom,
  signNotification,
  type LifecyclePlan,
  type Faults,
  type Lifecycle,
  type PayMethodKind,
  type Sender,
  type SimulationOptions,
  type SimulationReport,
} from '../../src/simulator';
import { parseSecondKeys } from '../../src/verification/secondKeys';
import { parseSignatureHeader } from '../../src/verification/signatureHeader';
import { verifySignature } from '../../src/verification/verifySignature';
import { EventConsumer } from '../support/broker';
import { startTestService, type TestService } from '../support/service';
import { simulateAgainst } from '../support/simulation';
import { waitUntil } from '../support/wait';
import { OTHER_KEY, OTHER_POS_ID, POS_ID, SECOND_KEY } from '../support/signing';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const plan = (overrides: Partial<LifecyclePlan> = {}): LifecyclePlan => ({
  posId: POS_ID,
  notifyUrl: 'https://shop.example/notify',
  payMethod: 'pbl',
  autoReceive: true,
  outcome: 'COMPLETED',
  totalAmount: '15000',
  currencyCode: 'PLN',
  refunds: [],
  gapMs: 2000,
  startMs: 0,
  runStartedAt: new Date('2026-11-22T10:00:00.000Z'),
  ...overrides,
});

const json = (body: Buffer): Record<string, unknown> => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

describe('simulator: lifecycles and bodies', () => {
  const cases: Array<[PayMethodKind, boolean, 'COMPLETED' | 'CANCELED', string[]]> = [];
  for (const payMethod of ['pbl', 'card', 'blik'] as const) {
    cases.push([payMethod, true, 'COMPLETED', ['PENDING', 'COMPLETED']]);
    cases.push([payMethod, true, 'CANCELED', ['PENDING', 'CANCELED']]);
    cases.push([payMethod, false, 'COMPLETED', ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED']]);
    cases.push([payMethod, false, 'CANCELED', ['PENDING', 'WAITING_FOR_CONFIRMATION', 'CANCELED']]);
  }

  it.each(cases)(
    'When a %s lifecycle is built with auto-receive %s ending %s, then the statuses follow the spec and the bodies read as planned',
    (payMethod, autoReceive, outcome, statuses) => {
      const lifecycle = buildLifecycle(plan({ payMethod, autoReceive, outcome }), seededRandom(1));
      expect(lifecycle.notifications.map((n) => n.status)).toEqual(statuses);
      expect(lifecycle.notifications.map((n) => n.changedAtMs)).toEqual(statuses.map((_, i) => i * 2000));
      for (const n of lifecycle.notifications) {
        // Compact JSON, as the sender posts it.
        expect(n.body.toString('utf8')).toBe(JSON.stringify(JSON.parse(n.body.toString('utf8'))));
        const parsed = parseNotification(n.body);
        if (!parsed.ok || parsed.notification.kind !== 'order')
          throw new Error(`not an order notification: ${n.body.toString()}`);
        expect(parsed.notification).toMatchObject({
          orderId: lifecycle.orderId,
          merchantPosId: POS_ID,
          status: n.status,
          totalAmount: '15000',
          currencyCode: 'PLN',
        });
        const body = json(n.body);
        const order = body.order as Record<string, unknown>;
        expect(Object.keys(order)).toEqual([
          'orderId',
          'extOrderId',
          'orderCreateDate',
          'notifyUrl',
          'customerIp',
          'merchantPosId',
          'description',
          'currencyCode',
          'totalAmount',
          ...(n.status === 'COMPLETED' ? ['buyer', 'payMethod'] : []),
          'status',
          'products',
        ]);
        expect(
          (order.products as Array<{ unitPrice: string; quantity: string }>).reduce(
            (sum, p) => sum + Number(p.unitPrice) * Number(p.quantity),
            0,
          ),
        ).toBe(15000);
        if (n.status === 'COMPLETED') {
          expect(parsed.notification.payMethodType).toBe(payMethod === 'card' ? 'CARD_TOKEN' : 'PBL');
          expect(parsed.notification.localReceiptDateTime).not.toBeNull();
          expect(order.buyer).toMatchObject({ email: expect.stringMatching(/@example\.com$/), language: 'pl' });
          expect(n.processingTimeMs).toEqual(expect.any(Number));
        } else {
          expect(body).not.toHaveProperty('localReceiptDateTime');
          expect(parsed.notification.payMethodType).toBeNull();
        }
        if (n.status === 'PENDING') expect(n.processingTimeMs).toBeNull();
        if (n.status === 'WAITING_FOR_CONFIRMATION' || n.status === 'COMPLETED') {
          expect(body.properties).toEqual([{ name: 'PAYMENT_ID', value: expect.stringMatching(/^\d+$/) }]);
        }
      }
    },
  );

  it('When full and partial refunds are planned, then a partial refunds its amount, a full what is left, and a rejected one counts for nothing', () => {
    const lifecycle = buildLifecycle(
      plan({
        refunds: [
          { amount: '4000', status: 'FINALIZED' },
          { amount: '3000', status: 'CANCELED' },
          { status: 'FINALIZED' },
        ],
      }),
      seededRandom(2),
    );
    const refunds = lifecycle.notifications.filter((n) => n.kind === 'refund');
    expect(refunds.map((r) => r.status)).toEqual(['FINALIZED', 'CANCELED', 'FINALIZED']);
    const bodies = refunds.map((r) => json(r.body));
    expect(bodies.map((b) => (b.refund as { amount: string }).amount)).toEqual(['4000', '3000', '11000']);
    expect(Object.keys(bodies[0] as object)).toEqual(['orderId', 'extOrderId', 'refund']);
    expect(Object.keys((bodies[0] as { refund: object }).refund)).toEqual([
      'refundId',
      'amount',
      'currencyCode',
      'status',
      'statusDateTime',
      'reason',
      'reasonDescription',
      'refundDate',
    ]);
    for (const r of refunds) {
      const parsed = parseNotification(r.body);
      expect(
        parsed.ok && parsed.notification.kind === 'refund' && parsed.notification.orderId === lifecycle.orderId,
      ).toBe(true);
    }
    expect(lifecycle.expected.refunds.map((r) => r.amount)).toEqual(['4000', '3000', '11000']);
  });

  it('When a conflict, a disagreement, a pending and a conflicting refund are planned, then the sender notifies each, in order, and the order still ends as first notified', () => {
    const lifecycle = buildLifecycle(
      plan({
        conflict: true,
        disagreement: true,
        refunds: [
          { amount: '4000', status: 'FINALIZED', pending: true },
          { amount: '3000', status: 'FINALIZED', conflict: true },
        ],
      }),
      seededRandom(5),
    );
    const sent = lifecycle.notifications;
    expect(sent.map((n) => `${n.kind}:${n.status}`)).toEqual([
      'order:PENDING',
      'order:COMPLETED',
      'refund:PENDING',
      'refund:FINALIZED',
      'refund:FINALIZED',
      'refund:CANCELED',
      'order:CANCELED',
    ]);
    const times = sent.map((n) => n.changedAtMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const amounts = sent.map((n) => (json(n.body).order as { totalAmount?: string } | undefined)?.totalAmount);
    expect(amounts).toEqual(['15000', '15100', undefined, undefined, undefined, undefined, '15000']);
    expect(new Set(sent.slice(2, 4).map((n) => n.refundId)).size).toBe(1);
    expect(new Set(sent.slice(4, 6).map((n) => n.refundId)).size).toBe(1);
    expect(lifecycle.expected).toEqual({
      order: 'COMPLETED',
      refunds: [
        { refundId: sent[2]?.refundId, amount: '4000', status: 'FINALIZED' },
        { refundId: sent[4]?.refundId, amount: '3000', status: 'FINALIZED' },
      ],
    });
    for (const n of sent) expect(parseNotification(n.body).ok).toBe(true);
  });

  it('When refunds exceed the order amount or a cancelled order is refunded, then the plan is refused', () => {
    expect(() =>
      buildLifecycle(
        plan({
          refunds: [
            { amount: '10000', status: 'FINALIZED' },
            { amount: '6000', status: 'FINALIZED' },
          ],
        }),
        seededRandom(3),
      ),
    ).toThrow(PlanError);
    expect(() =>
      buildLifecycle(plan({ outcome: 'CANCELED', refunds: [{ status: 'FINALIZED' }] }), seededRandom(3)),
    ).toThrow(PlanError);
    expect(() =>
      buildLifecycle(plan({ refunds: [{ status: 'FINALIZED' }, { status: 'FINALIZED' }] }), seededRandom(3)),
    ).toThrow(PlanError);
  });

  it('When the funds arrive on a whole second, then localReceiptDateTime drops the milliseconds and the offset, as the sender does', () => {
    expect(formatLocalReceiptDateTime(new Date('2026-01-15T09:25:40.000Z'))).toBe('2026-01-15T10:25:40');
    expect(formatLocalReceiptDateTime(new Date('2026-07-15T09:25:40.528Z'))).toBe('2026-07-15T11:25:40.528+02:00');
  });

  it('When the same seed is used twice, then the same traffic is built byte for byte', () => {
    const build = () =>
      buildTraffic({
        orders: 5,
        plan: 'random',
        base: {
          posId: POS_ID,
          notifyUrl: 'http://x/n',
          gapMs: 1000,
          runStartedAt: new Date('2026-11-22T10:00:00Z'),
          currencyCode: 'PLN',
        },
        spreadMs: 10_000,
        random: seededRandom(42),
      }).flatMap((l) => l.notifications.map((n) => n.body.toString('hex')));
    expect(build()).toEqual(build());
    expect(new Set(build()).size).toBe(build().length);
  });
});

describe('simulator: signing', () => {
  const body = buildLifecycle(plan(), seededRandom(4)).notifications[0]?.body as Buffer;
  const keys = parseSecondKeys(`${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}`).keys;

  it.each(['MD5', 'SHA-256'] as const)(
    'When a body is signed with %s, then the receiver verifies it with that key and no other',
    (algorithm) => {
      const header = parseSignatureHeader(signNotification(body, SECOND_KEY, algorithm));
      if (!header.ok) throw new Error(header.problem);
      expect(verifySignature(header.header, body, keys).matches.map((m) => m.posId)).toEqual([POS_ID]);
      expect(verifySignature(header.header, Buffer.concat([body, Buffer.from('\n')]), keys).matches).toEqual([]);
    },
  );

  it('When headers are built, then both spellings, the content type, Svc-Processing-Time and Basic auth are as asked', () => {
    const both = notificationHeaders(body, {
      secondKey: SECOND_KEY,
      algorithm: 'MD5',
      signatureHeaders: 'both',
      processingTimeMs: 215,
      basicAuth: { user: 'u', password: 'p:w' },
    });
    expect(both['OpenSvc-Signature']).toMatch(
      /^sender=checkout;signature=[0-9a-f]{32};algorithm=MD5;content=DOCUMENT$/,
    );
    expect(both['X-OpenSvc-Signature']).toBe(both['OpenSvc-Signature']);
    expect(both['Content-Type']).toBe('application/json;charset=UTF-8');
    expect(both['Svc-Processing-Time']).toBe('215');
    expect(both.Authorization).toBe(`Basic ${Buffer.from('u:p:w').toString('base64')}`);
    const one = notificationHeaders(body, {
      secondKey: SECOND_KEY,
      algorithm: 'SHA-256',
      signatureHeaders: 'X-OpenSvc-Signature',
      processingTimeMs: null,
    });
    expect(one).not.toHaveProperty('OpenSvc-Signature');
    expect(one).not.toHaveProperty('Svc-Processing-Time');
    expect(one).not.toHaveProperty('Authorization');
    expect(one['X-OpenSvc-Signature']).toMatch(/signature=[0-9a-f]{64};algorithm=SHA-256/);
  });
});

describe('simulator: retry schedule', () => {
  let server: http.Server;
  let url: string;
  let answers: number[] = [];
  const seen: Array<{ headers: http.IncomingHttpHeaders; body: Buffer }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
        const status = answers.shift() ?? 503;
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify(
            status === 200 ? { outcome: 'accepted' } : { error: { code: 'database_unavailable', message: 'x' } },
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notifications`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });

  const notification = buildLifecycle(plan(), seededRandom(5)).notifications[1];
  if (!notification) throw new Error('no notification');
  const headers = notificationHeaders(notification.body, {
    secondKey: SECOND_KEY,
    algorithm: 'MD5',
    signatureHeaders: 'both',
    processingTimeMs: 300,
  });

  it('When the receiver never answers 200, then all 20 attempts go out at the spec offsets from the status change and then it gives up', async () => {
    answers = [];
    // 72 simulated hours in about a quarter of a second.
    const result = await deliverWithRetries(
      { url, body: notification.body, headers, changedAtMs: 7 * MINUTE },
      { clock: scaledClock(1_000_000) },
    );
    expect(result.delivered).toBe(false);
    const expectedOffsets = [0, 1, 2, 5, 10, 30]
      .map((m) => m * MINUTE)
      .concat([1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 36, 48, 60, 72].map((h) => h * HOUR));
    expect([...RETRY_SCHEDULE_MS]).toEqual(expectedOffsets);
    expect(result.attempts.map((a) => a.scheduledAtMs)).toEqual(expectedOffsets.map((o) => 7 * MINUTE + o));
    for (const a of result.attempts) {
      expect(a.sentAtMs).toBeGreaterThanOrEqual(a.scheduledAtMs);
      expect(a).toMatchObject({ status: 503, answer: 'database_unavailable' });
    }
    expect(seen).toHaveLength(20);
    // Every attempt carries the same bytes and headers.
    for (const request of seen) {
      expect(request.body.equals(notification.body)).toBe(true);
      expect(request.headers['opensvc-signature']).toBe(headers['OpenSvc-Signature']);
      expect(request.headers['x-opensvc-signature']).toBe(headers['OpenSvc-Signature']);
      expect(request.headers['content-type']).toBe('application/json;charset=UTF-8');
      expect(request.headers['svc-processing-time']).toBe('300');
    }
  });

  it('When the third attempt is answered 200, then delivery stops there', async () => {
    answers = [500, 503, 200];
    const result = await deliverWithRetries(
      { url, body: notification.body, headers, changedAtMs: 0 },
      { clock: scaledClock(100_000) },
    );
    expect(result.delivered).toBe(true);
    expect(result.attempts.map((a) => [a.scheduledAtMs, a.status, a.answer])).toEqual([
      [0, 500, 'database_unavailable'],
      [MINUTE, 503, 'database_unavailable'],
      [2 * MINUTE, 200, 'accepted'],
    ]);
    expect(seen).toHaveLength(3);
  });

  it('When nothing listens, then the attempt reports no answer and the next one follows the schedule', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/n`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await deliverWithRetries(
      { url: deadUrl, body: notification.body, headers, changedAtMs: 0 },
      { clock: scaledClock(100_000), maxAttempts: 2 },
    );
    expect(result.attempts.map((a) => [a.status, a.answer])).toEqual([
      [null, 'ECONNREFUSED'],
      [null, 'ECONNREFUSED'],
    ]);
    expect(result.attempts[1]?.scheduledAtMs).toBe(MINUTE);
  });
});

describe('simulator: lost notifications and the payment-service double', () => {
  const accepted: Sender = () => Promise.resolve({ status: 200, body: '{"outcome":"accepted"}' });

  /** Random traffic of a seed, sent to `send` with the given faults (no receiver needed). */
  async function simulate(
    seed: number,
    faults: Faults,
    extra: Pick<SimulationOptions, 'send' | 'onStatusChange'> = {},
  ): Promise<{ lifecycles: Lifecycle[]; report: SimulationReport }> {
    const random = seededRandom(seed);
    const lifecycles = buildTraffic({
      orders: 20,
      plan: 'random',
      base: {
        posId: POS_ID,
        notifyUrl: 'http://shop.invalid/notify',
        gapMs: 2000,
        runStartedAt: new Date(0),
        currencyCode: 'PLN',
      },
      spreadMs: 2000,
      random,
    });
    const report = await runSimulation({
      url: 'http://shop.invalid/notify',
      lifecycles,
      secondKey: SECOND_KEY,
      algorithm: 'MD5',
      signatureHeaders: 'both',
      processingTime: true,
      faults,
      random,
      clock: scaledClock(1000),
      send: accepted,
      ...extra,
    });
    return { lifecycles, report };
  }

  it('When --drop loses a share of notifications, then they are never sent, the rest are, and the double knows every status as it happened', async () => {
    const double = new PaymentServiceDouble({ clients: [] });
    const sent: string[] = [];
    const learnedBeforeSent: boolean[] = [];
    const send: Sender = (url, body, headers, timeoutMs) => {
      const parsed = parseNotification(body);
      if (!parsed.ok) throw new Error('unreadable notification');
      const n = parsed.notification;
      sent.push(n.kind === 'order' ? `${n.orderId}:${n.status}` : `${n.refundId}:${n.status}`);
      // The status change happens before its notification goes out, so the double already knows it.
      if (n.kind === 'order') learnedBeforeSent.push(double.orderStatus(n.orderId) !== null);
      return accepted(url, body, headers, timeoutMs);
    };
    const { lifecycles, report } = await simulate(
      20261125,
      { duplicates: 0, reorder: 0, maxDelayMs: 0, drop: 0.3 },
      { send, onStatusChange: (n) => double.learn(n.body) },
    );

    const all = lifecycles.flatMap((l) => l.notifications);
    expect(report.summary.dropped).toBeGreaterThan(0);
    expect(report.summary.dropped + report.summary.deliveries).toBe(all.length);
    expect(report.summary.gaveUp).toBe(0);
    expect(sent).toHaveLength(report.summary.deliveries);
    for (const d of report.dropped) {
      expect(sent).not.toContain(`${d.kind === 'order' ? d.orderId : d.refundId}:${d.status}`);
    }
    expect(learnedBeforeSent.every(Boolean)).toBe(true);
    for (const lifecycle of lifecycles) expect(double.orderStatus(lifecycle.orderId)).toBe(lifecycle.expected.order);
  });

  it('When --drop is not asked for, then a seed builds and sends exactly the same run as before', async () => {
    const faults = { duplicates: 0.3, reorder: 0.3, maxDelayMs: 500 };
    const deliveries = async (f: Faults) =>
      (await simulate(99, f)).report.deliveries.map((d) => [d.orderId, d.status, d.copy, d.bodySha256]);
    expect(await deliveries({ ...faults, drop: 0 })).toEqual(await deliveries(faults));
  });
});

describe('simulator: against the real service', () => {
  let svc: TestService;
  let consumer: EventConsumer;
  beforeAll(async () => {
    svc = await startTestService();
    consumer = await new EventConsumer(svc.exchange).start();
  });
  afterAll(async () => {
    await svc.stop();
    await consumer.stop(); // last: it throws when an event did not match the contract
  });

  it('When random lifecycles are delivered with duplicates, reordering and delays, then every order and refund ends as planned and each status change is published once', async () => {
    const random = seededRandom(20261122);
    const lifecycles = buildTraffic({
      orders: 16,
      plan: 'random',
      base: {
        posId: POS_ID,
        notifyUrl: `${svc.publicUrl}/notifications`,
        gapMs: 2000,
        runStartedAt: new Date(),
        currencyCode: 'PLN',
      },
      spreadMs: 4000,
      random,
    });
    const report = await simulateAgainst(svc, lifecycles, random, { duplicates: 0.4, reorder: 0.5, maxDelayMs: 1500 });
    expect(report.summary.gaveUp).toBe(0);
    expect(report.summary.deliveries).toBeGreaterThan(report.summary.notifications);
    expect(report.deliveries.some((d) => d.reordered)).toBe(true);
    expect(report.summary.outcomes.duplicate).toBeGreaterThan(0);

    for (const lifecycle of lifecycles) {
      const res = await svc.admin.get(`/orders/${lifecycle.orderId}`);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe(lifecycle.expected.order);
      expect(res.body.totalAmount).toBe(lifecycle.plan.totalAmount);
      const refunds = new Map(
        (res.body.refunds as Array<{ refundId: string; status: string; amount: string }>).map((r) => [r.refundId, r]),
      );
      for (const refund of lifecycle.expected.refunds)
        expect(refunds.get(refund.refundId)).toMatchObject({ status: refund.status, amount: refund.amount });
    }

    const expectedFinalEvents = lifecycles.length + lifecycles.reduce((n, l) => n + l.expected.refunds.length, 0);
    const events = await waitUntil('the final event of every order and refund', () => {
      const bodies = consumer.bodies<{ id: string; type: string; subject: string; data: { refundId?: string } }>();
      const finals = bodies.filter((b) => /\.(completed|canceled|finalized)$/.test(b.type));
      return finals.length >= expectedFinalEvents && bodies;
    });
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.filter((e) => e.type.endsWith('status_conflict'))).toEqual([]);
    for (const lifecycle of lifecycles) {
      const ofOrder = events.filter((e) => e.subject === lifecycle.orderId && !e.data.refundId);
      expect(ofOrder.filter((e) => e.type === `order.${lifecycle.expected.order.toLowerCase()}`)).toHaveLength(1);
      for (const refund of lifecycle.expected.refunds) {
        expect(events.filter((e) => e.data.refundId === refund.refundId).map((e) => e.type)).toEqual([
          `refund.${refund.status.toLowerCase()}`,
        ]);
      }
    }
  });
});
