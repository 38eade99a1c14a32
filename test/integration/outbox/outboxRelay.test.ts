import request from 'supertest';
import { createLogger } from '../../../src/observability/logger';
import { createMetrics } from '../../../src/observability/metrics';
import { OutboxRelay, type RelayOptions } from '../../../src/outbox/outboxRelay';
import { republishOrderEvents } from '../../../src/outbox/outboxQueries';
import { AMQP_URL, EventConsumer, uniqueExchange } from '../../support/broker';
import { rmSync } from 'node:fs';
import amqp from 'amqplib';
import pg from 'pg';
import { migrate } from '../../../src/database/migrations';
import { ensureDatabaseExists } from '../../../src/database/pool';
import { ORDER_LOCK_SEED } from '../../../src/recording/batchQueries';
import { eventsOfOrder } from '../../../src/outbox/outboxQueries';
import { migrationsBefore, query, testDatabase, watchQueryOverlap, withDb } from '../../support/database';
import { pendingEvents } from '../../support/outbox';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { FaultProxy } from '../../support/faultProxy';
import { waitUntil } from '../../support/wait';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A relay of the test's own on a service's database (started with RELAY_ENABLED false, or as a second replica's),
 * polling every 50 ms unless told otherwise.
 */
const relayOn = (databaseUrl: string, exchange: string, options: Partial<RelayOptions> = {}): OutboxRelay =>
  new OutboxRelay({
    databaseUrl,
    amqpUrl: AMQP_URL,
    exchange,
    retentionMs: 86_400_000,
    pollIntervalMs: 50,
    metrics: createMetrics(),
    logger: createLogger('silent'),
    ...options,
  });

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
    withDb(url, async (db) =>
      (await Promise.all([...orderIds].sort().map((orderId) => eventsOfOrder(db, orderId, 100)))).flatMap((events) =>
        events.map((e) => ({ type: e.type, published: e.publishedAt !== null, unrouted: e.unroutedAt !== null })),
      ),
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
    const second = relayOn(svc.database.url, exchange, { pollIntervalMs: 1000 }); // a replica's default
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
    const relay = relayOn(svc.database.url, exchange, { pollIntervalMs: 600_000 });
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

interface Published {
  id: string;
  subject: string;
  type: string;
  data: { sequence: number };
}

/** Each order's sequences in the order they arrived, each event once (a repeat carries the same id). */
function sequencesByOrder(events: readonly Published[]): Map<string, number[]> {
  const seen = new Set<string>();
  const byOrder = new Map<string, number[]>();
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    byOrder.set(e.subject, [...(byOrder.get(e.subject) ?? []), e.data.sequence]);
  }
  return byOrder;
}

/**
 * Waits until the relay's session has run a statement about its cursor that began after `after` (the database's
 * clock) and finished: the relay has read the outbox at least once since then.
 */
const relayReadSince = (url: string, after: Date): Promise<boolean> =>
  waitUntil('the relay read the outbox since', async () => {
    const rows = await query<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'payment-notification-receiver:relay'
          AND state = 'idle' AND query_start > $1 AND query LIKE '%outbox_cursor%'`,
      [after],
    );
    return (rows[0]?.n ?? 0) > 0;
  }).then(() => true);

describe('the relay cursor (docs/decisions/0023)', () => {
  it('When many orders change at once, then every event is published once, each order in sequence, and nothing waits afterwards', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    try {
      const orders = Array.from({ length: 25 }, () => uniqueId('CUR'));
      await Promise.all(
        orders.map(async (orderId) => {
          for (const status of ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'])
            await svc.post(orderBody({ orderId, status })).expect(200);
        }),
      );
      await consumer.waitFor(orders.length * 3, 30_000);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      const events = consumer.bodies<Published>();
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length); // a clean run repeats nothing
      const byOrder = sequencesByOrder(events);
      for (const orderId of orders) expect(byOrder.get(orderId)).toEqual([1, 2, 3]);
      // Published by the cursor: the rows were written once, never marked.
      const [marked] = await query<{ n: number }>(
        svc.database.url,
        'SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NOT NULL OR xid IS NULL',
      );
      expect(marked?.n).toBe(0);
      const stored = await withDb(svc.database.url, (db) => eventsOfOrder(db, orders[0] as string, 10));
      expect(stored.map((e) => e.publishedAt instanceof Date)).toEqual([true, true, true]);
      for (const e of stored) expect(e.publishedAt?.getTime()).toBeGreaterThanOrEqual(e.createdAt.getTime());
    } finally {
      await svc.stop();
      await consumer.stop();
    }
  });

  it('When one order’s notifications race each other through several recorder lanes, then its events still leave in sequence', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, DATABASE_WRITE_LANES: '4' } });
    try {
      const orders = Array.from({ length: 20 }, () => uniqueId('RACE'));
      // Every status of an order at once: lanes (and the kept state, decision 0024) write its events concurrently,
      // each transaction getting its id only after it knows the order's last sequence.
      await Promise.all(
        orders.flatMap((orderId) =>
          ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'].map((status) =>
            svc.post(orderBody({ orderId, status })).expect(200),
          ),
        ),
      );
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0, 30_000);
      const [{ n: stored } = { n: 0 }] = await query<{ n: number }>(
        svc.database.url,
        'SELECT count(*)::int AS n FROM outbox_events WHERE order_id = ANY($1)',
        [orders],
      );
      await consumer.waitFor(stored);
      const byOrder = sequencesByOrder(consumer.bodies<Published>());
      for (const orderId of orders) {
        const sequences = byOrder.get(orderId) ?? [];
        expect(sequences.length).toBeGreaterThan(0);
        expect(sequences).toEqual(sequences.map((_, i) => i + 1)); // 1, 2, ...: none skipped, none out of order
      }
    } finally {
      await svc.stop();
      await consumer.stop();
    }
  });

  it('When a transaction that wrote an event is still open while a later one commits, then neither is skipped: the later one waits, and both are published, each order in sequence', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, RELAY_ENABLED: 'false' } });
    const relay = relayOn(svc.database.url, exchange);
    const writer = new pg.Client({ connectionString: svc.database.url });
    await writer.connect();
    relay.start();
    try {
      const early = uniqueId('EARLY');
      const late = uniqueId('LATE');
      await svc.post(orderBody({ orderId: early, status: 'PENDING' })).expect(200);
      await consumer.waitFor(1);

      // A writer as the recorder is (its order's lock first), its event written and its transaction left open: it
      // has the lower transaction id, and commits last. Its event is the order's next one (the first's, renumbered).
      await writer.query('BEGIN');
      await writer.query('SELECT pg_advisory_xact_lock(hashtextextended($1, $2))', [early, ORDER_LOCK_SEED]);
      await writer.query(
        `INSERT INTO outbox_events (id, order_id, sequence, type, message)
         SELECT gen_random_uuid(), order_id, 2, type, message FROM outbox_events WHERE order_id = $1`,
        [early],
      );
      await writer.query(
        `UPDATE outbox_events SET message = jsonb_set(jsonb_set(message::jsonb, '{id}', to_jsonb(id::text)),
                                                      '{data,sequence}', '2')::text
          WHERE order_id = $1 AND sequence = 2`,
        [early],
      );
      await svc.post(orderBody({ orderId: late, status: 'PENDING' })).expect(200);
      const [{ committed } = { committed: new Date() }] = await query<{ committed: Date }>(
        svc.database.url,
        'SELECT now() AS committed',
      );
      await relayReadSince(svc.database.url, committed);
      // The later transaction's event waits behind the open one (it would be lost if the cursor passed it now).
      expect(await withDb(svc.database.url, (db) => eventsOfOrder(db, late, 10))).toEqual([
        expect.objectContaining({ publishedAt: null }),
      ]);

      await writer.query('COMMIT');
      await waitUntil('both orders published', async () => {
        const byOrder = sequencesByOrder(consumer.bodies<Published>());
        return byOrder.get(early)?.length === 2 && byOrder.get(late)?.length === 1;
      });
      const byOrder = sequencesByOrder(consumer.bodies<Published>());
      expect(byOrder.get(early)).toEqual([1, 2]);
      expect(byOrder.get(late)).toEqual([1]);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      await writer.end();
      await relay.stop();
      await svc.stop();
      await consumer.stop();
    }
  });

  it('When a transaction with an id stays open, then outbox_cursor_held_seconds is at least its age', async () => {
    const svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
    const open = new pg.Client({ connectionString: svc.database.url });
    await open.connect();
    try {
      await open.query('BEGIN');
      const [mine] = (
        await open.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_current_xact_id()::text AS xid')
      ).rows;
      const [{ age } = { age: 0 }] = await query<{ age: number }>(
        svc.database.url,
        'SELECT extract(epoch from now() - xact_start)::float8 AS age FROM pg_stat_activity WHERE pid = $1',
        [mine?.pid],
      );
      const text = (await svc.admin.get('/metrics')).text;
      const held = Number(/^outbox_cursor_held_seconds (\S+)$/m.exec(text)?.[1]);
      // Read after the age was: at least that (an older transaction elsewhere in the cluster may count instead).
      expect(held).toBeGreaterThan(0);
      expect(held).toBeGreaterThanOrEqual(age - 0.001);
    } finally {
      await open.query('ROLLBACK');
      await open.end();
      await svc.stop();
    }
  });

  it('When the broker refuses an event, then it and its order’s later events are held and follow in sequence once it takes them, and other orders are not held back', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    // A queue that refuses what it has no room for (the broker then nacks): it takes order.completed only, and is full.
    const connection = await amqp.connect(AMQP_URL);
    const channel = await connection.createChannel();
    const full = `${exchange}.full`;
    await channel.assertExchange(exchange, 'topic', { durable: true });
    await channel.assertQueue(full, { arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    await channel.bindQueue(full, exchange, 'order.completed');
    channel.sendToQueue(full, Buffer.from('filler'));
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange } });
    try {
      const refused = uniqueId('NACK');
      const other = uniqueId('FREE');
      await svc.post(orderBody({ orderId: refused, status: 'PENDING' })).expect(200);
      await svc.post(orderBody({ orderId: refused, status: 'COMPLETED' })).expect(200);
      await svc
        .post(refundBody({ orderId: refused, refundId: uniqueId('NREF'), status: 'FINALIZED', amount: '100' }))
        .expect(200);
      await waitUntil('the refused event held with the broker’s answer', async () => {
        const events = await withDb(svc.database.url, (db) => eventsOfOrder(db, refused, 10));
        return events[1]?.lastError?.startsWith('nack') === true;
      });
      await svc.post(orderBody({ orderId: other, status: 'PENDING' })).expect(200);
      await waitUntil('the other order published', async () =>
        consumer.bodies<Published>().some((e) => e.subject === other),
      );
      const waiting = await withDb(svc.database.url, (db) => eventsOfOrder(db, refused, 10));
      expect(waiting.map((e) => [e.type, e.publishedAt === null])).toEqual([
        ['order.pending', false],
        ['order.completed', true],
        ['refund.finalized', true],
      ]);
      // The broker may have queued the refused event for the queues that took it: only its order's later one waits.
      expect(sequencesByOrder(consumer.bodies<Published>()).get(refused)).not.toContain(3);
      expect((await svc.admin.get('/metrics')).text).toMatch(/outbox_publish_failures_total\{reason="nack"\} [1-9]/);

      await channel.purgeQueue(full); // room again: the held events go at their next attempt
      await waitUntil(
        'the held events published',
        async () => sequencesByOrder(consumer.bodies<Published>()).get(refused)?.length === 3,
        30_000,
      );
      expect(sequencesByOrder(consumer.bodies<Published>()).get(refused)).toEqual([1, 2, 3]);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      const [held] = await query<{ n: number }>(svc.database.url, 'SELECT count(*)::int AS n FROM outbox_held');
      expect(held?.n).toBe(0);
    } finally {
      await svc.stop();
      await channel.deleteQueue(full).catch(() => undefined);
      await connection.close();
      await consumer.stop();
    }
  });

  it('When an order is re-published, then its events go again in sequence, and its events committed meanwhile follow them', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, RELAY_ENABLED: 'false' } });
    const relay = relayOn(svc.database.url, exchange);
    relay.start();
    try {
      const orderId = uniqueId('REPUB');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      await svc.post(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION' })).expect(200);
      await consumer.waitFor(2);
      await relay.stop();
      expect(await withDb(svc.database.url, (db) => republishOrderEvents(db, orderId))).toEqual({ republished: 2 });
      await svc.post(orderBody({ orderId, status: 'COMPLETED' })).expect(200);
      const again = relayOn(svc.database.url, exchange);
      again.start();
      try {
        await consumer.waitFor(5);
        expect(consumer.bodies<Published>().map((e) => e.data.sequence)).toEqual([1, 2, 1, 2, 3]);
        await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      } finally {
        await again.stop();
      }
    } finally {
      await relay.stop();
      await svc.stop();
      await consumer.stop();
    }
  });

  it('When the relay stops and another starts, then it goes on from the cursor: the events published before are not sent again', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, RELAY_ENABLED: 'false' } });
    try {
      const first = relayOn(svc.database.url, exchange);
      first.start();
      const before = Array.from({ length: 5 }, () => uniqueId('BEFORE'));
      for (const orderId of before) await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      await consumer.waitFor(5);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      await first.stop();

      const after = Array.from({ length: 5 }, () => uniqueId('AFTER'));
      for (const orderId of after) await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      expect(await pendingEvents(svc.database.url)).toBe(5);
      const second = relayOn(svc.database.url, exchange);
      second.start();
      try {
        await consumer.waitFor(10);
        await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      } finally {
        await second.stop();
      }
      const subjects = consumer.bodies<Published>().map((e) => e.subject);
      expect(subjects).toHaveLength(10); // a graceful stop ends its batch: nothing is sent twice
      expect(new Set(subjects)).toEqual(new Set([...before, ...after]));
    } finally {
      await svc.stop();
      await consumer.stop();
    }
  });
});

describe('retention behind the cursor', () => {
  it('When events were published by the cursor more than OUTBOX_RETENTION ago, then the sweep deletes them, and keeps one stored as long ago but published since', async () => {
    const exchange = uniqueExchange();
    const consumer = await new EventConsumer(exchange).start();
    const svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, RELAY_ENABLED: 'false' } });
    const idsOf = async (orderId: string): Promise<string[]> =>
      (
        await query<{ id: string }>(svc.database.url, 'SELECT id FROM outbox_events WHERE order_id = $1', [orderId])
      ).map((r) => r.id);
    try {
      const old = uniqueId('OLDPUB');
      let relay = relayOn(svc.database.url, exchange);
      relay.start();
      await svc.post(orderBody({ orderId: old, status: 'PENDING' })).expect(200);
      await consumer.waitFor(1);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      await relay.stop();
      // As two days later: the event and where the cursor was, both moved back.
      await query(svc.database.url, "UPDATE outbox_events SET created_at = created_at - interval '2 days'");
      await query(
        svc.database.url,
        "UPDATE outbox_cursor_history SET opened_at = opened_at - interval '2 days', reached_at = reached_at - interval '2 days'",
      );
      const recent = uniqueId('NEWPUB');
      relay = relayOn(svc.database.url, exchange);
      relay.start();
      await svc.post(orderBody({ orderId: recent, status: 'PENDING' })).expect(200);
      await consumer.waitFor(2);
      await waitUntil('no event pending', async () => (await pendingEvents(svc.database.url)) === 0);
      await relay.stop();
      // Stored two days ago too, but published just now: kept for the retention from its publication.
      await query(
        svc.database.url,
        "UPDATE outbox_events SET created_at = now() - interval '2 days' WHERE order_id = $1",
        [recent],
      );
      const kept = await idsOf(recent);

      const sweeper = relayOn(svc.database.url, exchange);
      sweeper.start(); // its first batch sweeps
      try {
        await waitUntil('the old event deleted', async () => (await idsOf(old)).length === 0);
      } finally {
        await sweeper.stop();
      }
      expect(await idsOf(recent)).toEqual(kept);
      expect(kept).toHaveLength(1);
    } finally {
      await svc.stop();
      await consumer.stop();
    }
  });
});

describe('an outbox from before the relay cursor (sql/024)', () => {
  it('When sql/024 runs on an outbox with waiting and published events, then the waiting ones are published in sequence and the published ones not again', async () => {
    // Real events, as a service writes them: taken from a database of its own, then written as before sql/024.
    const exchange = uniqueExchange();
    const source = await startTestService({ env: { RELAY_ENABLED: 'false' } });
    const waitingOrder = uniqueId('LEGW');
    const publishedOrder = uniqueId('LEGP');
    let rows: Array<{ id: string; order_id: string; sequence: string; type: string; message: string }>;
    try {
      for (const status of ['PENDING', 'COMPLETED'])
        await source.post(orderBody({ orderId: waitingOrder, status })).expect(200);
      await source.post(orderBody({ orderId: publishedOrder, status: 'PENDING' })).expect(200);
      rows = await query(
        source.database.url,
        'SELECT id, order_id, sequence::text, type, message FROM outbox_events ORDER BY order_id, sequence',
      );
    } finally {
      await source.stop();
    }
    const db = testDatabase();
    const before = migrationsBefore('024');
    const consumer = await new EventConsumer(exchange).start();
    try {
      await ensureDatabaseExists(db.url);
      await migrate(db.url, createLogger('silent'), before);
      for (const r of rows)
        await query(
          db.url,
          `INSERT INTO outbox_events (id, order_id, sequence, type, message, published_at, attempts, last_error)
           VALUES ($1, $2, $3, $4, $5, CASE WHEN $2 = $6 THEN now() END, CASE WHEN $2 = $6 THEN 0 ELSE 1 END,
                   CASE WHEN $2 = $6 THEN NULL ELSE 'connection: broker gone' END)`,
          [r.id, r.order_id, r.sequence, r.type, r.message, publishedOrder],
        );
      await migrate(db.url, createLogger('silent'));
      expect(await query(db.url, 'SELECT count(*)::int AS n FROM outbox_events WHERE xid IS NOT NULL')).toEqual([
        { n: 0 },
      ]);
      expect(await pendingEvents(db.url)).toBe(2);

      const relay = relayOn(db.url, exchange);
      relay.start();
      try {
        await consumer.waitFor(2);
        await waitUntil('no event pending', async () => (await pendingEvents(db.url)) === 0);
      } finally {
        await relay.stop();
      }
      const events = consumer.bodies<Published>();
      expect(events.map((e) => [e.subject, e.data.sequence])).toEqual([
        [waitingOrder, 1],
        [waitingOrder, 2],
      ]);
    } finally {
      rmSync(before, { recursive: true, force: true });
      await consumer.stop();
      await db.drop();
    }
  });
});
