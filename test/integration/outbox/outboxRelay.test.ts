import request from 'supertest';
import { createLogger } from '../../../src/observability/logger';
import { createMetrics } from '../../../src/observability/metrics';
import { OutboxRelay } from '../../../src/outbox/outboxRelay';
import { republishOrderEvents } from '../../../src/outbox/outboxQueries';
import { AMQP_URL, EventConsumer, uniqueExchange } from '../../support/broker';
import { query, watchQueryOverlap, withDb } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { FaultProxy } from '../../support/faultProxy';
import { waitUntil } from '../../support/wait';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const pendingEvents = async (url: string): Promise<number> =>
  Number((await query<{ n: string }>(url, 'SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL'))[0]?.n);

describe('events of a lifecycle', () => {
  let svc: TestService;
  let consumer: EventConsumer;
  beforeAll(async () => {
    const exchange = uniqueExchange();
    consumer = await new EventConsumer(exchange).start();
    svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, EVENT_SOURCE: 'urn:test:receiver' } });
  });
  afterAll(async () => {
    await svc.stop();
    await consumer.stop();
  });

  it('When an order completes and is refunded, with duplicates and stale repeats, then exactly the applied changes are published, in order, in the documented format', async () => {
    const orderId = uniqueId('EVT');
    const refundId = uniqueId('REF');
    const deliveries = [
      orderBody({ orderId, status: 'PENDING', paymentId: 'P1' }),
      orderBody({ orderId, status: 'PENDING', paymentId: 'P1' }), // duplicate
      orderBody({
        orderId,
        status: 'COMPLETED',
        paymentId: 'P1',
        payMethodType: 'CARD_TOKEN',
        localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
      }),
      orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION', paymentId: 'P1' }), // stale
      refundBody({ orderId, refundId, status: 'FINALIZED', amount: '5000', extRefundId: 'shop-refund-1' }),
      refundBody({ orderId, refundId, status: 'FINALIZED', amount: '5000', extRefundId: 'shop-refund-1' }), // duplicate
    ];
    for (const body of deliveries) await svc.post(body).expect(200);

    // Events are written with their notification, answered after the commit: the stale and the duplicate wrote none.
    const [written] = await query<{ n: string }>(
      svc.database.url,
      'SELECT count(*) AS n FROM outbox_events WHERE order_id = $1',
      [orderId],
    );
    expect(Number(written?.n)).toBe(3);
    const messages = (await consumer.waitFor(3)).filter((m) => JSON.parse(m.content.toString()).subject === orderId);
    expect(messages).toHaveLength(3);

    expect(messages.map((m) => m.fields.routingKey)).toEqual(['order.pending', 'order.completed', 'refund.finalized']);
    const [pending, completed, refunded] = messages.map(
      (m) => JSON.parse(m.content.toString('utf8')) as Record<string, unknown>,
    );

    for (const m of messages) {
      const event = JSON.parse(m.content.toString()) as { id: string; type: string };
      expect(m.properties).toMatchObject({
        messageId: event.id,
        contentType: 'application/cloudevents+json',
        type: event.type,
        deliveryMode: 2,
        timestamp: expect.any(Number),
      });
    }
    expect(pending).toEqual({
      specversion: '1.0',
      id: expect.stringMatching(UUID),
      source: 'urn:test:receiver',
      type: 'order.pending',
      subject: orderId,
      time: expect.any(String),
      datacontenttype: 'application/json',
      dataschema: 'urn:payment-notification-receiver:events:v1:order',
      data: {
        orderId,
        extOrderId: `ext-${orderId}`,
        merchantPosId: '300746',
        status: 'PENDING',
        previousStatus: null,
        totalAmount: '15000',
        currencyCode: 'PLN',
        paymentId: 'P1',
        payMethodType: null,
        localReceiptDateTime: null,
        // No time of the payment service's own yet: booked at the event's time.
        bookingTime: pending?.time,
        sequence: 1,
        notificationId: expect.stringMatching(/^\d+$/),
        observedVia: 'notification',
      },
    });
    expect(completed).toMatchObject({
      type: 'order.completed',
      data: {
        status: 'COMPLETED',
        previousStatus: 'PENDING',
        payMethodType: 'CARD_TOKEN',
        localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
        bookingTime: '2026-11-01T09:05:00.123Z',
        sequence: 2,
      },
    });
    expect(refunded).toEqual({
      specversion: '1.0',
      id: expect.stringMatching(UUID),
      source: 'urn:test:receiver',
      type: 'refund.finalized',
      subject: orderId,
      time: expect.any(String),
      datacontenttype: 'application/json',
      dataschema: 'urn:payment-notification-receiver:events:v1:refund',
      data: {
        orderId,
        extOrderId: `ext-${orderId}`,
        merchantPosId: '300746',
        refundId,
        extRefundId: 'shop-refund-1',
        amount: '5000',
        currencyCode: 'PLN',
        orderCurrencyCode: 'PLN',
        status: 'FINALIZED',
        previousStatus: null,
        statusDateTime: '2026-11-02T12:00:00.000+01:00',
        refundDate: '2026-11-02T11:59:59.000+01:00',
        bookingTime: '2026-11-02T10:59:59.000Z',
        reason: 'refund',
        reasonDescription: 'customer request',
        sequence: 3,
        notificationId: expect.stringMatching(/^\d+$/),
        observedVia: 'notification',
      },
    });
    expect(Number(new Date(pending?.time as string))).not.toBeNaN();
  });

  it('When a conflict arrives, then order.status_conflict is published for alerting', async () => {
    const orderId = uniqueId('CEVT');
    for (const status of ['COMPLETED', 'CANCELED']) await svc.post(orderBody({ orderId, status })).expect(200);
    await waitUntil(
      'both events of the order consumed',
      async () => consumer.bodies<{ subject: string }>().filter((b) => b.subject === orderId).length === 2,
    );
    const events = consumer
      .bodies<{ subject: string; type: string; data: { status: string; previousStatus: string; sequence: number } }>()
      .filter((b) => b.subject === orderId);
    expect(events.map((e) => [e.type, e.data.status, e.data.previousStatus, e.data.sequence])).toEqual([
      ['order.completed', 'COMPLETED', null, 1],
      ['order.status_conflict', 'CANCELED', 'COMPLETED', 2],
    ]);
  });

  it('When events were published, then the metrics show them and the backlog is empty', async () => {
    await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
    const text = (await svc.admin.get('/metrics')).text;
    expect(text).toMatch(/outbox_events_published_total\{type="order.completed"\} [1-9]/);
    expect(text).toMatch(/outbox_pending_events 0/);
    expect(text).toMatch(/outbox_oldest_pending_event_created_timestamp_seconds 0/);
    expect(text).toMatch(/outbox_publish_latency_seconds_count [1-9]/);
    expect(text).toMatch(/amqp_connection_up 1/);
    expect(text).toMatch(/outbox_relay_active 1/);
  });
});

describe('without pipelining', () => {
  it('When DATABASE_PIPELINE is false, then notifications are recorded and their events published, with no query sent while another runs', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const overlap = watchQueryOverlap();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, DATABASE_PIPELINE: 'false' } });
    try {
      const orderIds = Array.from({ length: 20 }, () => uniqueId('NOPIPE'));
      await Promise.all(orderIds.map((orderId) => svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200)));
      await Promise.all(orderIds.map((orderId) => svc.post(orderBody({ orderId, status: 'COMPLETED' })).expect(200)));
      await consumer.waitFor(40);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      expect(new Set(consumer.bodies<{ subject: string }>().map((e) => e.subject))).toEqual(new Set(orderIds));
      expect(overlap.most()).toBe(1);
    } finally {
      overlap.stop();
      await svc.stop();
      await consumer.stop();
    }
  });
});

/** The console's needs-attention page (open on a loopback admin port without tokens), its text on one line. */
const attentionPage = async (svc: TestService): Promise<string> =>
  (await request(svc.adminUrl).get('/console/attention').expect(200)).text.replace(/\s+/g, ' ');

describe('events no queue is bound for', () => {
  const LIFECYCLE = ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'];

  interface OutboxState {
    type: string;
    published: boolean;
    unrouted: boolean;
  }
  const outboxOf = (url: string, orderIds: readonly string[]): Promise<OutboxState[]> =>
    query<OutboxState>(
      url,
      `SELECT type, published_at IS NOT NULL AS published, unrouted_at IS NOT NULL AS unrouted
         FROM outbox_events WHERE order_id = ANY($1) ORDER BY order_id, sequence`,
      [orderIds],
    );

  it('When only order.completed is bound, then every order.completed arrives at once, and the events no queue took are published, counted, kept and shown in needs attention', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange, 'order.completed').start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    try {
      const orders = Array.from({ length: 8 }, () => uniqueId('ONLYC'));
      await Promise.all(
        orders.map(async (orderId) => {
          for (const status of LIFECYCLE) await svc.post(orderBody({ orderId, status })).expect(200);
        }),
      );
      await consumer.waitFor(orders.length);
      expect(
        new Set(consumer.bodies<{ subject: string; type: string }>().map((e) => `${e.type} ${e.subject}`)),
      ).toEqual(new Set(orders.map((orderId) => `order.completed ${orderId}`)));

      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      const rows = await outboxOf(svc.database.url, orders);
      expect(rows).toHaveLength(orders.length * LIFECYCLE.length); // kept: the feed and a replay serve them
      for (const row of rows)
        expect(row).toEqual({ type: row.type, published: true, unrouted: row.type !== 'order.completed' });

      const metrics = (await svc.admin.get('/metrics')).text;
      expect(metrics).toMatch(new RegExp(`outbox_events_unrouted_total\\{type="order.pending"\\} ${orders.length}\\b`));
      expect(metrics).toMatch(
        new RegExp(`outbox_events_unrouted_total\\{type="order.waiting_for_confirmation"\\} ${orders.length}\\b`),
      );
      expect(metrics).not.toMatch(/outbox_events_unrouted_total\{type="order.completed"\}/);
      expect(metrics).toMatch(/outbox_publish_failures_total\{reason="nack"\} 0/);

      const page = await attentionPage(svc);
      expect(page).toContain(
        `<code>order.pending</code>: ${orders.length} events about ${orders.length} orders reached no queue`,
      );
      expect(page).toContain(
        `<code>order.waiting_for_confirmation</code>: ${orders.length} events about ${orders.length} orders reached no queue`,
      );
    } finally {
      await svc.stop();
      await consumer.stop();
    }
  });

  it('When no queue is bound at all, then nothing is blocked and nothing is lost: every event is published as unrouted and kept', async () => {
    const exchange = uniqueExchange();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    try {
      const orders = Array.from({ length: 5 }, () => uniqueId('NOQ'));
      for (const orderId of orders)
        for (const status of LIFECYCLE) await svc.post(orderBody({ orderId, status })).expect(200);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      const rows = await outboxOf(svc.database.url, orders);
      expect(rows).toHaveLength(orders.length * LIFECYCLE.length);
      expect(rows.every((r) => r.published && r.unrouted)).toBe(true);
      const page = await attentionPage(svc);
      expect(page).toMatch(/<tr id="line-events-waiting"[^>]*data-severity="ok"/);
      expect(page).toMatch(/<tr id="line-events-unrouted"[^>]*data-severity="warning"/);
    } finally {
      await svc.stop();
    }
  });

  it("When an order's events were unrouted and are re-published once a queue is bound, then they reach it and are no longer marked unrouted", async () => {
    const exchange = uniqueExchange();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    let consumer: EventConsumer | null = null;
    try {
      const orderId = uniqueId('UNR');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      await waitUntil('the event published', async () => (await pendingEvents(svc.database.url)) === 0);
      consumer = await new EventConsumer(exchange).start();
      expect(await withDb(svc.database.url, (db) => republishOrderEvents(db, orderId))).toEqual({ republished: 1 });
      await consumer.waitFor(1);
      expect(consumer.bodies<{ subject: string }>()[0]?.subject).toBe(orderId);
      await waitUntil('the event published again', async () => (await pendingEvents(svc.database.url)) === 0);
      expect(await outboxOf(svc.database.url, [orderId])).toEqual([
        { type: 'order.pending', published: true, unrouted: false },
      ]);
    } finally {
      await svc.stop();
      await consumer?.stop();
    }
  });
});

describe('broker outage', () => {
  it('When the broker is cut mid-traffic, then every notification still gets 200, events wait, and all drain once it is back', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const proxy = await new FaultProxy(5672).start();
    const svc = await startTestService({
      env: { AMQP_EXCHANGE: exchange, AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}` },
    });
    try {
      const orders = Array.from({ length: 20 }, () => uniqueId('BRK'));
      for (const orderId of orders.slice(0, 10)) await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      proxy.reset();
      for (const orderId of orders) await svc.post(orderBody({ orderId, status: 'COMPLETED' })).expect(200);
      for (const orderId of orders.slice(10)) await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200); // stale: no event
      expect((await svc.admin.get('/readyz')).status).toBe(200);
      expect(await pendingEvents(svc.database.url)).toBeGreaterThan(0);

      proxy.pass();
      await consumer.waitFor(30, 30_000);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0, 30_000);
      const events = consumer.bodies<{ id: string; subject: string; type: string; data: { sequence: number } }>();
      const ids = new Set(events.map((e) => e.id));
      const [{ n: committed } = { n: '0' }] = await query<{ n: string }>(
        svc.database.url,
        'SELECT count(*) AS n FROM outbox_events',
      );
      expect(ids.size).toBe(Number(committed)); // nothing lost (repeats, if any, carry the same id)
      expect(ids.size).toBe(30);
      for (const orderId of orders) {
        const mine = events.filter((e) => e.subject === orderId);
        const sequences = [...new Map(mine.map((e) => [e.id, e.data.sequence])).values()];
        expect(sequences).toEqual([...sequences].sort((a, b) => a - b)); // per-order order kept
      }
    } finally {
      proxy.pass();
      await svc.stop();
      await proxy.stop();
      await consumer.stop();
    }
  });

  it('When the broker is unreachable at start, then notifications are accepted and readiness holds', async () => {
    const svc = await startTestService({ env: { AMQP_URL: 'amqp://guest:guest@127.0.0.1:1' } });
    try {
      await svc.post(orderBody({ orderId: uniqueId('NOBRK'), status: 'PENDING' })).expect(200);
      expect((await svc.admin.get('/readyz')).status).toBe(200);
      expect(await pendingEvents(svc.database.url)).toBe(1);
      const text = (await svc.admin.get('/metrics')).text;
      expect(text).toMatch(/amqp_connection_up 0/);
      expect(text).toMatch(/outbox_pending_events 1/);
    } finally {
      await svc.stop();
    }
  });
});

describe('several relays', () => {
  it('When two relays run at once, then one is active, the other stands by, and per-order order holds', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    const second = new OutboxRelay({
      databaseUrl: svc.database.url,
      amqpUrl: AMQP_URL,
      exchange,
      retentionMs: 86_400_000,
      metrics: createMetrics(),
      logger: createLogger('silent'),
    });
    second.start();
    try {
      const orders = Array.from({ length: 15 }, () => uniqueId('TWO'));
      await Promise.all(
        orders.map(async (orderId) => {
          for (const status of ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'])
            await svc.post(orderBody({ orderId, status })).expect(200);
        }),
      );
      await consumer.waitFor(45, 30_000);
      expect([svc.service.relay?.isActive, second.isActive].filter(Boolean)).toHaveLength(1);
      for (const orderId of orders) {
        const mine = consumer
          .bodies<{ subject: string; type: string; data: { sequence: number } }>()
          .filter((e) => e.subject === orderId);
        expect(mine.map((e) => [e.type, e.data.sequence])).toEqual([
          ['order.pending', 1],
          ['order.waiting_for_confirmation', 2],
          ['order.completed', 3],
        ]);
      }

      // The active relay stops (a pod going away): the standby takes over within about a poll interval.
      const wasActive = svc.service.relay?.isActive ? svc.service.relay : second;
      const standby = wasActive === second ? svc.service.relay : second;
      await wasActive?.stop();
      const orderId = uniqueId('TAKE');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      await waitUntil(
        'an event of the order consumed',
        async () => consumer.bodies<{ subject: string }>().some((e) => e.subject === orderId),
        10_000,
      );
      expect(standby?.isActive).toBe(true);
    } finally {
      await second.stop();
      await svc.stop();
      await consumer.stop();
    }
  });
});

describe('batches in a row', () => {
  it("When an order's events are pending together, then the relay publishes them one batch after another, without waiting for a poll or a wake-up", async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, RELAY_ENABLED: 'false' } });
    const orderId = uniqueId('NEXT');
    for (const status of ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'])
      await svc.post(orderBody({ orderId, status })).expect(200);
    // A batch takes one event per order, and nothing is committed after the relay starts: no
    // wake-up hint comes, so the relay must go on by itself, not wait for its (10-minute) poll.
    const relay = new OutboxRelay({
      databaseUrl: svc.database.url,
      amqpUrl: AMQP_URL,
      exchange,
      retentionMs: 86_400_000,
      pollIntervalMs: 600_000,
      metrics: createMetrics(),
      logger: createLogger('silent'),
    });
    relay.start();
    try {
      await consumer.waitFor(3, 10_000);
      expect(
        consumer.bodies<{ type: string; data: { sequence: number } }>().map((e) => [e.type, e.data.sequence]),
      ).toEqual([
        ['order.pending', 1],
        ['order.waiting_for_confirmation', 2],
        ['order.completed', 3],
      ]);
    } finally {
      await relay.stop();
      await svc.stop();
      await consumer.stop();
    }
  });
});
