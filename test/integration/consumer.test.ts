import { randomBytes } from 'node:crypto';
import amqp, { type ChannelModel } from 'amqplib';
import pg from 'pg';
import { deadLetterQueue, PaymentEventConsumer } from '../../examples/consumer/src/consumer';
import { ensureDatabaseExists } from '../../src/database/pool';
import { buildLifecycle, buildTraffic, seededRandom } from '../../src/simulator';
import { AMQP_URL, uniqueExchange } from '../support/broker';
import { query, testDatabase, type TestDatabase } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, POS_ID, uniqueId } from '../support/signing';
import { simulateAgainst } from '../support/simulation';
import { waitUntil } from '../support/wait';
import { pendingEvents } from '../support/outbox';

/**
 * examples/consumer, the reference consumer a team copies (docs/EVENTS.md), run against the real service and
 * RabbitMQ: it ends equal to the service's projections after duplicates, reordering and poison messages, holds
 * what it must, acks only after its commit, and is the only consumer of its queue.
 */

interface FeedEvent {
  id: string;
  type: string;
  subject: string;
  data: { orderId: string; disagreements?: unknown[] };
}

let svc: TestService;
let consumerDb: TestDatabase;
let broker: ChannelModel;
const queue = `test.fulfilment.${randomBytes(4).toString('hex')}`;
const logs: string[] = [];

const consumerOf = (retryMs = 50): PaymentEventConsumer =>
  new PaymentEventConsumer({
    amqpUrl: AMQP_URL,
    exchange: svc.exchange,
    queue,
    bindings: ['order.*', 'refund.*'],
    databaseUrl: consumerDb.url,
    prefetch: 20,
    retryMs,
    log: (message, fields) => void logs.push(`${message} ${JSON.stringify(fields)}`),
  });

/** The service's projections and the consumer's state, side by side, as comparable text. */
async function bothSides(): Promise<{ service: string[]; consumer: string[] }> {
  const serviceOrders = await query<{ line: string }>(
    svc.database.url,
    `SELECT concat_ws(' ', 'order', order_id, status, total_amount, currency_code) AS line FROM orders`,
  );
  const serviceRefunds = await query<{ line: string }>(
    svc.database.url,
    `SELECT concat_ws(' ', 'refund', refund_id, order_id, status, amount, currency_code) AS line FROM refunds`,
  );
  const consumerOrders = await query<{ line: string }>(
    consumerDb.url,
    `SELECT concat_ws(' ', 'order', order_id, status, total_amount, currency_code) AS line FROM payments`,
  );
  const consumerRefunds = await query<{ line: string }>(
    consumerDb.url,
    `SELECT concat_ws(' ', 'refund', refund_id, order_id, status, amount, currency_code) AS line FROM refunds`,
  );
  return {
    service: [...serviceOrders, ...serviceRefunds].map((r) => r.line).sort(),
    consumer: [...consumerOrders, ...consumerRefunds].map((r) => r.line).sort(),
  };
}

/** Every event the service has, from the feed. */
async function feed(): Promise<FeedEvent[]> {
  const events: FeedEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const page: { events: FeedEvent[]; next: string; more: boolean } = (
      await svc.admin.get(`/events?limit=1000${after ? `&after=${after}` : ''}`).expect(200)
    ).body;
    events.push(...page.events);
    after = page.next;
    if (!page.more) return events;
  }
}

beforeAll(async () => {
  svc = await startTestService({ env: { AMQP_EXCHANGE: uniqueExchange() } });
  consumerDb = testDatabase('nr_consumer');
  await ensureDatabaseExists(consumerDb.url);
  broker = await amqp.connect(AMQP_URL);
}, 60_000);
afterAll(async () => {
  const channel = await broker.createChannel();
  await channel.deleteQueue(queue).catch(() => undefined);
  await channel.deleteQueue(deadLetterQueue(queue)).catch(() => undefined);
  await broker.close();
  await svc.stop();
  await consumerDb.drop();
});

describe('the example consumer', () => {
  it('When events come late, twice, out of order and among poison messages, then the consumer ends equal to the projections, holding what it must', async () => {
    // Traffic before the team's queue exists: the service keeps every event (the feed), none is lost.
    const random = seededRandom(44);
    const base = {
      posId: POS_ID,
      notifyUrl: `${svc.publicUrl}/notifications`,
      gapMs: 2000,
      runStartedAt: new Date(),
      currencyCode: 'PLN',
    };
    const lifecycles = [
      ...buildTraffic({ orders: 12, plan: 'random', base, spreadMs: 3000, random }),
      buildLifecycle(
        {
          ...base,
          startMs: 500,
          payMethod: 'card',
          autoReceive: false,
          outcome: 'COMPLETED',
          totalAmount: '20000',
          disagreement: true,
          conflict: true,
          refunds: [
            { amount: '5000', status: 'FINALIZED', pending: true },
            { amount: '5000', status: 'FINALIZED', conflict: true },
          ],
        },
        random,
      ),
    ];
    const report = await simulateAgainst(svc, lifecycles, random, { duplicates: 0.3, reorder: 0.3, maxDelayMs: 500 });
    expect(report.summary.gaveUp).toBe(0);
    await waitUntil('every event published', async () => (await pendingEvents(svc.database.url)) === 0);

    // The team starts its consumer, and backfills: every event, shuffled, a third of them twice, with poison.
    const consumer = consumerOf();
    await consumer.start();
    try {
      const events = await feed();
      const raw = await query<{ id: string; type: string; message: string }>(
        svc.database.url,
        'SELECT id, type, message FROM outbox_events',
      );
      const deliveries = [...raw, ...raw.filter((_, i) => i % 3 === 0)];
      for (let i = deliveries.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [deliveries[i], deliveries[j]] = [deliveries[j] as (typeof raw)[number], deliveries[i] as (typeof raw)[number]];
      }
      const completed = JSON.parse(raw.find((e) => e.type === 'order.completed')?.message ?? '{}');
      const poison = [
        { id: uniqueId('POISON'), type: 'order.completed', message: '{"not": "an event"' },
        {
          id: completed.id,
          type: 'order.completed',
          message: JSON.stringify({ ...completed, data: { ...completed.data, totalAmount: 15000 } }),
        },
        {
          id: completed.id,
          type: 'order.completed',
          message: JSON.stringify({ ...completed, dataschema: 'urn:payment-notification-receiver:events:v2:order' }),
        },
      ];
      const unknown = {
        id: uniqueId('LATER'),
        type: 'order.shipped',
        message: JSON.stringify({ ...completed, type: 'order.shipped' }),
      };
      deliveries.splice(Math.floor(deliveries.length / 2), 0, ...poison, unknown);
      const channel = await broker.createConfirmChannel();
      for (const d of deliveries)
        channel.sendToQueue(queue, Buffer.from(d.message), {
          messageId: d.id,
          type: d.type,
          contentType: 'application/cloudevents+json',
          persistent: true,
        });
      await channel.waitForConfirms();

      // And live traffic goes on meanwhile, through the exchange.
      const live = uniqueId('LIVE');
      for (const status of ['PENDING', 'COMPLETED']) await svc.post(orderBody({ orderId: live, status })).expect(200);

      const sides = await waitUntil(
        'the consumer equal to the projections',
        async () => {
          const both = await bothSides();
          return both.consumer.join('\n') === both.service.join('\n') && both;
        },
        60_000,
      );
      expect(sides.consumer.length).toBeGreaterThan(lifecycles.length);
      await waitUntil('the poison dead-lettered', () => consumer.stats.deadLettered === poison.length);
      expect(consumer.stats).toMatchObject({ ignored: 1, deadLettered: poison.length, failures: 0 });
      expect(consumer.stats.duplicates).toBeGreaterThanOrEqual(deliveries.length - raw.length - poison.length - 1);
      const dead = await channel.checkQueue(deadLetterQueue(queue));
      expect(dead.messageCount).toBe(poison.length);

      // On hold: the order whose notification disagreed and that got a conflict, and the conflicting refund.
      const held = await query<{ order_id: string }>(consumerDb.url, 'SELECT order_id FROM payments WHERE on_hold');
      const expectedHeld = new Set(
        events
          .filter((e) => e.type === 'order.status_conflict' || (e.type.startsWith('order.') && e.data.disagreements))
          .map((e) => e.subject),
      );
      expect(new Set(held.map((h) => h.order_id))).toEqual(expectedHeld);
      expect(expectedHeld.has(lifecycles[lifecycles.length - 1]?.orderId ?? '')).toBe(true);
      const heldRefunds = await query<{ n: number }>(
        consumerDb.url,
        'SELECT count(*)::int AS n FROM refunds WHERE on_hold',
      );
      expect(heldRefunds[0]?.n).toBe(events.filter((e) => e.type === 'refund.status_conflict').length);
      expect(heldRefunds[0]?.n).toBeGreaterThan(0);
    } finally {
      await consumer.stop();
    }
  }, 120_000);

  it('When a second consumer starts on the same queue, then the broker refuses it: one consumer per queue', async () => {
    const first = consumerOf();
    await first.start();
    const second = consumerOf();
    try {
      await expect(second.start()).rejects.toThrow(/ACCESS.REFUSED|exclusive/i);
    } finally {
      await second.stop();
      await first.stop();
    }
  });

  it('When its database fails while it handles an event, then the event is not acked, and is applied once the database is back', async () => {
    const consumer = consumerOf(60_000);
    await consumer.start();
    const lock = new pg.Client({ connectionString: consumerDb.url });
    await lock.connect();
    const orderId = uniqueId('ACK');
    let stopped: Promise<void> | null = null;
    try {
      await lock.query('BEGIN');
      // EXCLUSIVE, not ACCESS EXCLUSIVE: that one takes a transaction id (logged for standbys), and an open
      // transaction with an id anywhere in the cluster holds back the service's relay (docs/decisions/0023), so the
      // event would never come. This one still stops the consumer's write.
      await lock.query('LOCK TABLE payments IN EXCLUSIVE MODE');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      // Its transaction waits on the lock; the database then drops its connection: the transaction fails.
      const [waiting] = await waitUntil('the consumer waiting on the lock', async () => {
        const rows = await query<{ pid: number }>(
          consumerDb.url,
          `SELECT pid FROM pg_stat_activity WHERE application_name = 'payment-event-consumer' AND wait_event_type = 'Lock'`,
        );
        return rows.length > 0 && rows;
      });
      await query(consumerDb.url, 'SELECT pg_terminate_backend($1)', [waiting?.pid]);
      await waitUntil('the failure seen', () => consumer.stats.failures > 0);
      // Stopped before its retry: the message was never acked, so the broker keeps it.
      stopped = consumer.stop();
      await stopped;
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      await lock.end();
      await stopped;
    }
    const applied = await query(consumerDb.url, 'SELECT 1 FROM payments WHERE order_id = $1', [orderId]);
    expect(applied).toEqual([]);

    const again = consumerOf();
    await again.start();
    try {
      await waitUntil('the event applied by the next consumer', async () => {
        const rows = await query<{ status: string }>(
          consumerDb.url,
          'SELECT status FROM payments WHERE order_id = $1',
          [orderId],
        );
        return rows[0]?.status === 'PENDING';
      });
      expect(again.stats).toMatchObject({ failures: 0 });
    } finally {
      await again.stop();
    }
  });
});
