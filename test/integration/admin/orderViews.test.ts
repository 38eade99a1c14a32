import { query, whileOrderLocked } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId, type OrderFields } from '../../support/signing';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
});
afterAll(() => svc.stop());

const getOrder = async (orderId: string) => svc.admin.get(`/orders/${encodeURIComponent(orderId)}`);

async function deliver(fields: OrderFields): Promise<string> {
  const res = await svc.post(orderBody(fields));
  expect(res.status).toBe(200);
  return res.body.outcome as string;
}

/** payment_status_conflicts_total's series matching `labels`, by source. */
async function conflicts(labels: Record<string, string>): Promise<Record<string, number>> {
  const [counter] = await svc.service.metrics.registry
    .getMetricsAsJSON()
    .then((all) => all.filter((m) => m.name === 'payment_status_conflicts_total'));
  const bySource: Record<string, number> = {};
  for (const { labels: l, value } of counter?.values ?? [])
    if (Object.entries(labels).every(([k, v]) => l[k] === v)) bySource[String(l.source)] = value;
  return bySource;
}

/** Delivers the statuses in the given order and returns each outcome. */
async function sequence(orderId: string, statuses: string[]): Promise<string[]> {
  const outcomes: string[] = [];
  for (const status of statuses) outcomes.push(await deliver({ orderId, status, paymentId: 'P1' }));
  return outcomes;
}

describe('order projection', () => {
  it('When PENDING then COMPLETED arrive, then the order is COMPLETED with the payment details', async () => {
    const orderId = uniqueId('LIFE');
    await deliver({ orderId, status: 'PENDING', paymentId: '7001' });
    await deliver({
      orderId,
      status: 'COMPLETED',
      paymentId: '7001',
      payMethodType: 'PBL',
      localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
    });
    const res = await getOrder(orderId);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      orderId,
      extOrderId: `ext-${orderId}`,
      merchantPosId: '300746',
      status: 'COMPLETED',
      totalAmount: '15000',
      currencyCode: 'PLN',
      paymentId: '7001',
      payMethodType: 'PBL',
      localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
      refunds: [],
    });
    expect(res.body.history).toEqual([
      {
        status: 'PENDING',
        receivedAt: expect.any(String),
        applied: true,
        outcome: 'applied',
        deliveries: 1,
        disagreements: [],
        observedVia: 'notification',
      },
      {
        status: 'COMPLETED',
        receivedAt: expect.any(String),
        applied: true,
        outcome: 'applied',
        deliveries: 1,
        disagreements: [],
        observedVia: 'notification',
      },
    ]);
  });

  it('When the sequence arrives reversed, then COMPLETED holds and the late ones are stale', async () => {
    const orderId = uniqueId('REV');
    expect(await sequence(orderId, ['COMPLETED', 'WAITING_FOR_CONFIRMATION', 'PENDING'])).toEqual([
      'accepted',
      'stale',
      'stale',
    ]);
    const res = await getOrder(orderId);
    expect(res.body.status).toBe('COMPLETED');
    expect(res.body.history.map((h: { status: string; applied: boolean }) => [h.status, h.applied])).toEqual([
      ['COMPLETED', true],
      ['WAITING_FOR_CONFIRMATION', false],
      ['PENDING', false],
    ]);
  });

  it('When auto-receive is off, then PENDING, WAITING_FOR_CONFIRMATION, COMPLETED all apply in turn', async () => {
    const orderId = uniqueId('WFC');
    expect(await sequence(orderId, ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'])).toEqual([
      'accepted',
      'accepted',
      'accepted',
    ]);
    expect((await getOrder(orderId)).body.status).toBe('COMPLETED');
  });

  it('When every status is delivered twice, then the repeats are duplicates counted as deliveries', async () => {
    const orderId = uniqueId('DUP');
    expect(await sequence(orderId, ['PENDING', 'PENDING', 'COMPLETED', 'COMPLETED', 'PENDING'])).toEqual([
      'accepted',
      'duplicate',
      'accepted',
      'duplicate',
      'duplicate',
    ]);
    const res = await getOrder(orderId);
    expect(res.body.history.map((h: { deliveries: number }) => h.deliveries)).toEqual([3, 2]);
    expect(res.body.contradicted).toBeNull();
  });

  it('When COMPLETED is followed by CANCELED, then it is a conflict: recorded, logged as an error, COMPLETED kept', async () => {
    const orderId = uniqueId('CONF');
    expect(await sequence(orderId, ['PENDING', 'COMPLETED', 'CANCELED'])).toEqual(['accepted', 'accepted', 'conflict']);
    const order = (await getOrder(orderId)).body;
    expect(order.status).toBe('COMPLETED');
    expect(order.contradicted).toMatchObject({
      statuses: [
        { status: 'COMPLETED', receivedAt: expect.any(String) },
        { status: 'CANCELED', receivedAt: expect.any(String) },
      ],
      held: true,
      money: expect.stringMatching(/^The money may have been taken, or not: COMPLETED came at .*, CANCELED at /),
      toDo: expect.stringContaining(`POST /orders/${orderId}/reconcile`),
    });
    const errorLine = svc.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.orderId === orderId && l.level === 50);
    expect(errorLine).toMatchObject({ outcome: 'conflict', status: 'CANCELED', keptStatus: 'COMPLETED' });
    const metrics = await svc.admin.get('/metrics');
    expect(metrics.text).toMatch(/payment_notifications_total\{kind="order",outcome="conflict"\} [1-9]/);
  });

  it('When CANCELED is followed by COMPLETED, then it is a conflict, CANCELED is kept, and the conflict is counted as observed by a notification', async () => {
    const orderId = uniqueId('CONF2');
    const completedOnCanceled = { kind: 'order', status: 'COMPLETED', kept_status: 'CANCELED' };
    const before = await conflicts(completedOnCanceled);
    expect(await sequence(orderId, ['CANCELED', 'COMPLETED'])).toEqual(['accepted', 'conflict']);
    expect((await getOrder(orderId)).body.status).toBe('CANCELED');
    const after = await conflicts(completedOnCanceled);
    expect(after).toEqual({ ...before, notification: (before.notification ?? 0) + 1 });
  });

  it('When a later notification lacks a field, then the projection keeps the value it had', async () => {
    const orderId = uniqueId('KEEP');
    await deliver({ orderId, status: 'PENDING', paymentId: 'P9', payMethodType: 'PBL' });
    const canceled = JSON.parse(orderBody({ orderId, status: 'CANCELED' })) as { order: Record<string, unknown> };
    delete canceled.order.extOrderId;
    await svc.post(JSON.stringify(canceled)).expect(200);
    expect((await getOrder(orderId)).body).toMatchObject({
      status: 'CANCELED',
      paymentId: 'P9',
      payMethodType: 'PBL',
      extOrderId: `ext-${orderId}`,
    });
  });

  it('When a notification this process committed is repeated exactly, then it is a duplicate without waiting for its order', async () => {
    const orderId = uniqueId('KNOWN');
    const body = orderBody({ orderId, status: 'PENDING' });
    expect((await svc.post(body)).body.outcome).toBe('accepted');
    // Another transaction holds the order's lock: anything that needs the order would wait for it.
    await whileOrderLocked(svc.service.pool, orderId, async () => {
      const repeat = await svc.post(body);
      expect(repeat.status).toBe(200);
      expect(repeat.body.outcome).toBe('duplicate');
    });
    const [row] = await query<{ deliveries: string; outcomes: string[] }>(
      svc.database.url,
      `SELECT count(*) AS deliveries, array_agg(d.outcome ORDER BY d.id) AS outcomes
         FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.subject_id = $1`,
      [orderId],
    );
    expect(row).toEqual({ deliveries: '2', outcomes: ['accepted', 'duplicate'] });
  });

  it('When the same meaning arrives with other bytes, then it is kept as a variant and counted', async () => {
    const orderId = uniqueId('VAR');
    await deliver({ orderId, status: 'PENDING' });
    const pretty = JSON.stringify(JSON.parse(orderBody({ orderId, status: 'PENDING' })), null, 2);
    expect((await svc.post(pretty)).body.outcome).toBe('duplicate');
    const rows = await query<{ body: Buffer }>(
      svc.database.url,
      'SELECT v.body FROM notification_variants v JOIN notifications n ON n.id = v.notification_id WHERE n.subject_id = $1',
      [orderId],
    );
    expect(rows.map((r) => r.body.toString('utf8'))).toEqual([pretty]);
    expect((await svc.admin.get('/metrics')).text).toMatch(/payment_notification_variants_total\{kind="order"\} [1-9]/);
  });

  it('When an amount is huge but exact, then it is stored and shown exactly, never as a float', async () => {
    const orderId = uniqueId('BIG');
    await deliver({ orderId, status: 'PENDING', totalAmount: '900719925474099312' });
    expect((await getOrder(orderId)).body.totalAmount).toBe('900719925474099312');
  });

  it('When 50 copies of one notification arrive at once, then there is one record and one projection change', async () => {
    const orderId = uniqueId('PAR');
    const body = orderBody({ orderId, status: 'COMPLETED', paymentId: 'P50' });
    const results = await Promise.all(Array.from({ length: 50 }, () => svc.post(body)));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const outcomes = results.map((r) => r.body.outcome as string).sort();
    expect(outcomes.filter((o) => o === 'accepted')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(49);
    const [counts] = await query<{ notifications: string; deliveries: string }>(
      svc.database.url,
      `SELECT (SELECT count(*) FROM notifications WHERE subject_id = $1) AS notifications,
              (SELECT count(*) FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.subject_id = $1) AS deliveries`,
      [orderId],
    );
    expect(counts).toEqual({ notifications: '1', deliveries: '50' });
  });

  it('When different statuses of a new order race, then the highest wins and nothing moves backwards', async () => {
    for (let round = 0; round < 5; round++) {
      const orderId = uniqueId('RACE');
      const statuses = ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'PENDING', 'COMPLETED'];
      const results = await Promise.all(statuses.map((status) => svc.post(orderBody({ orderId, status }))));
      expect(results.every((r) => r.status === 200)).toBe(true);
      expect((await getOrder(orderId)).body.status).toBe('COMPLETED');
    }
  });

  it('When an order is unknown, then 404 with a JSON error', async () => {
    const res = await getOrder('NOPE');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('order_not_found');
  });
});

describe('refund projection', () => {
  it('When a refund arrives before anything is known of its order, then it is recorded and shown with the order later', async () => {
    const orderId = uniqueId('RORD');
    const refundId = uniqueId('REF');
    expect((await svc.post(refundBody({ orderId, refundId, status: 'FINALIZED', amount: '5000' }))).body.outcome).toBe(
      'accepted',
    );
    const refund = await svc.admin.get(`/refunds/${refundId}`);
    expect(refund.body).toMatchObject({
      refundId,
      orderId,
      status: 'FINALIZED',
      amount: '5000',
      currencyCode: 'PLN',
      reason: 'refund',
    });
    await deliver({ orderId, status: 'COMPLETED' });
    const order = await getOrder(orderId);
    expect(order.body.refunds).toEqual([expect.objectContaining({ refundId, status: 'FINALIZED' })]);
  });

  it('When a refund is FINALIZED then CANCELED, then it is a conflict and FINALIZED is kept', async () => {
    const orderId = uniqueId('RC');
    const refundId = uniqueId('REF');
    const outcomes: string[] = [];
    for (const status of ['PENDING', 'FINALIZED', 'CANCELED', 'PENDING', 'FINALIZED']) {
      outcomes.push((await svc.post(refundBody({ orderId, refundId, status }))).body.outcome as string);
    }
    expect(outcomes).toEqual(['accepted', 'accepted', 'conflict', 'duplicate', 'duplicate']);
    const refund = (await svc.admin.get(`/refunds/${refundId}`)).body;
    expect(refund.status).toBe('FINALIZED');
    expect(refund.contradicted).toMatchObject({
      statuses: [{ status: 'FINALIZED' }, { status: 'CANCELED' }],
      held: true,
      money: expect.stringMatching(/^The money may have gone back to the customer, or not: FINALIZED came at /),
    });
  });

  it('When a panel refund without amount, currency and statusDateTime arrives, then it is accepted', async () => {
    const body = JSON.stringify({
      orderId: uniqueId('PANEL'),
      extOrderId: '50024',
      refund: { refundId: uniqueId('R'), status: 'FINALIZED', reason: 'refund', refundDate: '1604422726567' },
    });
    expect((await svc.post(body)).body.outcome).toBe('accepted');
  });

  it('When partial refunds of one order arrive, then each is its own refund under the order', async () => {
    const orderId = uniqueId('PART');
    await deliver({ orderId, status: 'COMPLETED' });
    for (const [refundId, amount] of [
      [uniqueId('R1'), '5000'],
      [uniqueId('R2'), '2500'],
    ] as const) {
      await svc.post(refundBody({ orderId, refundId, status: 'FINALIZED', amount })).expect(200);
    }
    const order = await getOrder(orderId);
    expect(order.body.refunds.map((r: { amount: string }) => r.amount).sort()).toEqual(['2500', '5000']);
  });

  it('When a refund is unknown, then 404', async () => {
    expect((await svc.admin.get('/refunds/NOPE')).status).toBe(404);
  });
});
