import fc from 'fast-check';
import { EventConsumer } from '../../support/broker';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { waitUntil } from '../../support/wait';
import {
  exactBytes,
  OTHER_KEY,
  OTHER_POS_ID,
  orderBody,
  POS_ID,
  refundBody,
  SECOND_KEY,
  sign,
  uniqueId,
} from '../../support/signing';

// Two POS are configured (POS_ID with SECOND_KEY, OTHER_POS_ID with OTHER_KEY), as a shop with two
// points of sale has them. Every test is an attack or an anomaly an authentic sender could produce.

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

const post = (body: string, key: string) =>
  svc.public
    .post('/notifications')
    .set('Content-Type', 'application/json;charset=UTF-8')
    .set('OpenSvc-Signature', sign(body, key))
    .serialize(exactBytes)
    .send(Buffer.from(body));

const orderOf = async (orderId: string) => (await svc.admin.get(`/orders/${orderId}`)).body;
const rowsOf = async (orderId: string): Promise<number> =>
  Number(
    (
      await query<{ n: string }>(
        svc.database.url,
        `SELECT (SELECT count(*) FROM notifications WHERE order_id = $1)
              + (SELECT count(*) FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1)
              + (SELECT count(*) FROM outbox_events WHERE order_id = $1) AS n`,
        [orderId],
      )
    )[0]?.n,
  );

/** An order of OTHER_POS_ID, recorded PENDING with its own key. */
async function otherPosOrder(): Promise<string> {
  const orderId = uniqueId('OWNED');
  await post(orderBody({ orderId, status: 'PENDING', merchantPosId: OTHER_POS_ID }), OTHER_KEY).expect(200);
  return orderId;
}

/** An order body without order.merchantPosId, or with it null. */
const withPos = (body: string, merchantPosId: string | null | undefined): string => {
  const parsed = JSON.parse(body) as { order: Record<string, unknown> };
  if (merchantPosId === undefined) delete parsed.order.merchantPosId;
  else parsed.order.merchantPosId = merchantPosId;
  return JSON.stringify(parsed);
};

describe("A POS's key vouches for its own payments only", () => {
  it.each([
    ['naming its own POS', POS_ID],
    ['naming no POS', undefined],
    ['naming a null POS', null],
  ] as const)(
    "When another POS's order is completed by a body %s signed with this POS's key, then 401 pos_mismatch and nothing changes",
    async (_what, merchantPosId) => {
      const orderId = await otherPosOrder();
      const before = await rowsOf(orderId);
      for (const status of ['COMPLETED', 'CANCELED']) {
        const body = withPos(orderBody({ orderId, status, totalAmount: '1' }), merchantPosId);
        const res = await post(body, SECOND_KEY);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('pos_mismatch');
      }
      expect(await rowsOf(orderId)).toBe(before);
      expect(await orderOf(orderId)).toMatchObject({
        status: 'PENDING',
        merchantPosId: OTHER_POS_ID,
        totalAmount: '15000',
      });
    },
  );

  it("When a refund of another POS's order is signed with this POS's key, then 401 pos_mismatch and nothing is recorded", async () => {
    const orderId = await otherPosOrder();
    const refundId = uniqueId('R');
    const res = await post(refundBody({ orderId, refundId, status: 'FINALIZED' }), SECOND_KEY);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('pos_mismatch');
    expect((await svc.admin.get(`/refunds/${refundId}`)).status).toBe(404);
  });

  it("When a replay of the order owner's own notification is signed with another key, then it is refused too, even once known", async () => {
    const orderId = uniqueId('REPLAY');
    const body = orderBody({ orderId, status: 'PENDING', merchantPosId: undefined });
    const own = withPos(body, undefined);
    await post(own, OTHER_KEY).expect(200);
    await post(own, OTHER_KEY).expect(200); // known now: the fast path
    const res = await post(own, SECOND_KEY);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('pos_mismatch');
  });

  it('When a refund arrives before its order, then it binds the order to its POS', async () => {
    const orderId = uniqueId('REFUNDFIRST');
    await post(refundBody({ orderId, refundId: uniqueId('R'), status: 'FINALIZED' }), OTHER_KEY).expect(200);
    const res = await post(withPos(orderBody({ orderId, status: 'COMPLETED' }), undefined), SECOND_KEY);
    expect(res.status).toBe(401);
    await post(withPos(orderBody({ orderId, status: 'COMPLETED' }), undefined), OTHER_KEY).expect(200);
    expect(await orderOf(orderId)).toMatchObject({ status: 'COMPLETED', merchantPosId: OTHER_POS_ID });
  });

  it('When refusals happen, then they are counted apart from bad signatures', async () => {
    const orderId = await otherPosOrder();
    await post(orderBody({ orderId, status: 'COMPLETED', merchantPosId: undefined }), SECOND_KEY).expect(401);
    const metrics = (await svc.admin.get('/metrics')).text;
    expect(
      Number(/payment_notifications_total\{kind="unknown",outcome="rejected_pos"\} (\d+)/.exec(metrics)?.[1]),
    ).toBeGreaterThan(0);
  });
});

describe('Facts that do not change are never rewritten', () => {
  it('When a later notification of the same POS states another amount and currency, then the first stay, the event carries them, and the disagreement is recorded', async () => {
    const orderId = uniqueId('FACTS');
    await post(orderBody({ orderId, status: 'PENDING' }), SECOND_KEY).expect(200);
    const res = await post(
      orderBody({ orderId, status: 'COMPLETED', totalAmount: '1', currencyCode: 'EUR' }),
      SECOND_KEY,
    );
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe('accepted');
    const order = await orderOf(orderId);
    expect(order).toMatchObject({ status: 'COMPLETED', totalAmount: '15000', currencyCode: 'PLN' });
    expect(order.history[1].disagreements).toEqual([
      { field: 'totalAmount', kept: '15000', received: '1' },
      { field: 'currencyCode', kept: 'PLN', received: 'EUR' },
    ]);
    await consumer.waitFor(1);
    const completed = await waitUntil(
      'order.completed consumed',
      () =>
        consumer
          .bodies<{ subject: string; type: string; data: { totalAmount: string } }>()
          .find((e) => e.subject === orderId && e.type === 'order.completed'),
      10_000,
    );
    expect(completed.data.totalAmount).toBe('15000');
    const metrics = (await svc.admin.get('/metrics')).text;
    expect(metrics).toMatch(/payment_notification_disagreements_total\{kind="order",field="totalAmount"\} [1-9]/);
    expect(svc.logs.some((l) => l.includes('"disagreements":["totalAmount","currencyCode"]'))).toBe(true);
    expect(svc.logs.some((l) => l.includes('"kept"') || l.includes('EUR'))).toBe(false);
  });

  it('When a refund recorded under one order is later notified under another, then it stays under the first and every answer is 200, retries included', async () => {
    const first = uniqueId('RA');
    const second = uniqueId('RB');
    const refundId = uniqueId('RMOVE');
    await post(orderBody({ orderId: first, status: 'COMPLETED' }), SECOND_KEY).expect(200);
    await post(orderBody({ orderId: second, status: 'COMPLETED' }), SECOND_KEY).expect(200);
    await post(refundBody({ orderId: first, refundId, status: 'FINALIZED' }), SECOND_KEY).expect(200);
    const moved = refundBody({ orderId: second, refundId, status: 'CANCELED' });
    for (const expected of ['conflict', 'duplicate', 'duplicate']) {
      const res = await post(moved, SECOND_KEY);
      expect(res.status).toBe(200);
      expect(res.body.outcome).toBe(expected);
    }
    const refund = (await svc.admin.get(`/refunds/${refundId}`)).body;
    expect(refund).toMatchObject({ orderId: first, status: 'FINALIZED' });
    const streams = await query<{ order_id: string; sequence: string; type: string }>(
      svc.database.url,
      'SELECT order_id, sequence::text, type FROM outbox_events WHERE order_id = ANY($1) ORDER BY order_id, sequence',
      [[first, second]],
    );
    expect(streams.filter((e) => e.order_id === first).map((e) => [e.sequence, e.type])).toEqual([
      ['1', 'order.completed'],
      ['2', 'refund.finalized'],
      ['3', 'refund.status_conflict'],
    ]);
  });
});

describe('The audit stays useful under replay', () => {
  it('When one notification is replayed 150 times, then at most about 100 rows are kept and the true number is shown', async () => {
    const orderId = uniqueId('REPLAYS');
    const body = orderBody({ orderId, status: 'PENDING' });
    for (let i = 0; i < 151; i++) await post(body, SECOND_KEY).expect(200);
    const [rows] = await query<{ n: string }>(
      svc.database.url,
      'SELECT count(*) AS n FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1',
      [orderId],
    );
    expect(Number(rows?.n)).toBe(100);
    expect((await orderOf(orderId)).history[0].deliveries).toBe(151);
  });

  it('When one unreadable authentic body is replayed 105 times, then its quarantine keeps 100 delivery rows and counts the rest', async () => {
    const body = '{"order":{"orderId":"NOT-A-NOTIFICATION","status":"SOMETHING"}}';
    for (let i = 0; i < 105; i++) expect((await post(body, SECOND_KEY)).body.outcome).toBe('quarantined');
    const [row] = await query<{ rows: string; repeats: string }>(
      svc.database.url,
      `SELECT (SELECT count(*) FROM deliveries d WHERE d.quarantine_id = q.id) AS rows,
              (SELECT deliveries FROM delivery_repeats r WHERE r.quarantine_id = q.id) AS repeats
         FROM quarantined_notifications q WHERE q.body_sha256 = sha256($1)`,
      [Buffer.from(body)],
    );
    expect(row).toEqual({ rows: '100', repeats: '5' });
  });
});

describe('No authentic notification gets a 5xx', () => {
  it('When any mix of order and refund notifications arrives, duplicated, reordered and concurrent, then every answer is 200 and every stream is gapless', async () => {
    const statuses = {
      order: ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'CANCELED'],
      refund: ['PENDING', 'FINALIZED', 'CANCELED'],
    };
    const notification = fc.oneof(
      fc.record({
        kind: fc.constant('order' as const),
        order: fc.nat(2),
        status: fc.constantFrom(...statuses.order),
        amount: fc.constantFrom('100', '200'),
        currency: fc.constantFrom('PLN', 'EUR'),
        pos: fc.constantFrom<string | null | undefined>(POS_ID, null, undefined),
      }),
      fc.record({
        kind: fc.constant('refund' as const),
        order: fc.nat(2),
        refund: fc.nat(2),
        status: fc.constantFrom(...statuses.refund),
        amount: fc.constantFrom('10', '20'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(notification, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }),
        async (waves) => {
          const unrecordable = async (): Promise<string | undefined> =>
            (
              await query<{ n: string }>(
                svc.database.url,
                "SELECT count(*) AS n FROM quarantined_notifications WHERE reason = 'unrecordable'",
              )
            )[0]?.n;
          const quarantinedBefore = await unrecordable();
          const run = uniqueId('MIX');
          const orderIds = [0, 1, 2].map((i) => `${run}O${i}`);
          for (const wave of waves) {
            // Each wave arrives at once: the recorder takes it as one batch or several.
            const answers = await Promise.all(
              wave.map((n) => {
                const orderId = orderIds[n.order] as string;
                const body =
                  n.kind === 'order'
                    ? withPos(
                        orderBody({ orderId, status: n.status, totalAmount: n.amount, currencyCode: n.currency }),
                        n.pos,
                      )
                    : refundBody({ orderId, refundId: `${run}R${n.refund}`, status: n.status, amount: n.amount });
                return post(body, SECOND_KEY);
              }),
            );
            for (const answer of answers) expect(answer.status).toBe(200);
          }
          const events = await query<{ order_id: string; sequence: string }>(
            svc.database.url,
            'SELECT order_id, sequence::text FROM outbox_events WHERE order_id = ANY($1) ORDER BY order_id, sequence',
            [orderIds],
          );
          for (const orderId of orderIds) {
            const sequences = events.filter((e) => e.order_id === orderId).map((e) => Number(e.sequence));
            expect(sequences).toEqual(sequences.map((_, i) => i + 1));
          }
          // Nothing needed the safety net: every combination is recorded for what it is.
          expect(await unrecordable()).toBe(quarantinedBefore);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
