import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import pg from 'pg';
import { AMQP_URL, EventConsumer, uniqueExchange } from '../support/broker';
import { eventContractProblems } from '../support/contracts';
import { query } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, refundBody, uniqueId } from '../support/signing';
import { waitUntil } from '../support/wait';

/** GET /events and POST /events/replay (src/admin/eventRoutes.ts): the feed and the team replay, black-box. */

interface CloudEvent {
  id: string;
  type: string;
  subject: string;
  time: string;
  data: { sequence: number; notificationId: string };
}
interface EventPage {
  events: CloudEvent[];
  next: string | null;
  more: boolean;
}

const TOKEN = 'feed-admin-token-0123456789';
const auth = { Authorization: `Bearer ${TOKEN}` };

let svc: TestService;
let consumer: EventConsumer;
const orders = Array.from({ length: 6 }, () => uniqueId('FEED'));

const pendingEvents = async (): Promise<number> =>
  Number(
    (
      await query<{ n: string }>(svc.database.url, 'SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL')
    )[0]?.n,
  );

/** The outbox as stored, in the order the feed promises. */
const outbox = async (): Promise<Array<{ message: string; created_at: Date }>> =>
  query(svc.database.url, 'SELECT message, created_at FROM outbox_events ORDER BY created_at, id');

async function page(path: string): Promise<EventPage> {
  return (await svc.admin.get(path).set(auth).expect(200)).body as EventPage;
}

/** Every page from the start (or `after`), following `next` while `more`. */
async function pageToEnd(
  params: string,
  after: string | null = null,
): Promise<{ events: CloudEvent[]; pages: number }> {
  const events: CloudEvent[] = [];
  let next = after;
  for (let pages = 1; ; pages++) {
    const got = await page(`/events?${params}${next ? `&after=${next}` : ''}`);
    events.push(...got.events);
    next = got.next;
    if (!got.more) return { events, pages };
  }
}

/** An event of the feed as a consumer would receive it, for the AsyncAPI check. */
const asConsumed = (event: CloudEvent) => ({
  fields: { routingKey: event.type },
  properties: {
    deliveryMode: 2,
    messageId: event.id,
    contentType: 'application/cloudevents+json',
    type: event.type,
    timestamp: 0,
  },
  content: Buffer.from(JSON.stringify(event)),
});

beforeAll(async () => {
  const exchange = uniqueExchange();
  // Only completed orders have a queue: the other events are published unrouted, and the feed keeps them all.
  consumer = await new EventConsumer(exchange, 'order.completed').start();
  svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, ADMIN_TOKEN: TOKEN } });
  for (const [i, orderId] of orders.entries()) {
    for (const status of ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED'])
      await svc.post(orderBody({ orderId, status })).expect(200);
    if (i % 2 === 0)
      await svc
        .post(refundBody({ orderId, refundId: uniqueId('FREF'), status: 'FINALIZED', amount: '100' }))
        .expect(200);
  }
  await waitUntil('every event published', async () => (await pendingEvents()) === 0);
}, 60_000);
afterAll(async () => {
  await svc.stop();
  await consumer.stop();
});

describe('the feed', () => {
  it('When the feed is paged to the end, then it equals the outbox, event for event, each as published', async () => {
    const { events, pages } = await pageToEnd('limit=4');
    const stored = await outbox();
    expect(events).toEqual(stored.map((row) => JSON.parse(row.message) as unknown));
    expect(events).toHaveLength(orders.length * 3 + orders.length / 2);
    expect(pages).toBeGreaterThan(4);
    for (const event of events) expect(eventContractProblems(asConsumed(event))).toEqual([]);
    // Each order's events in sequence order, as on the wire.
    for (const orderId of orders) {
      const sequences = events.filter((e) => e.subject === orderId).map((e) => e.data.sequence);
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    }
    // The same documents the consumer got from the broker.
    const delivered = consumer.bodies<CloudEvent>();
    expect(delivered.length).toBeGreaterThan(0);
    for (const event of delivered) expect(events).toContainEqual(event);
  });

  it('When filtered by type, order and time, then only those events come, in feed order', async () => {
    const completed = await pageToEnd('type=order.completed&limit=2');
    expect(completed.events.map((e) => e.subject)).toEqual(orders);
    expect(new Set(completed.events.map((e) => e.type))).toEqual(new Set(['order.completed']));

    const both = await pageToEnd('type=order.pending,refund.finalized');
    expect(both.events.filter((e) => e.type === 'order.pending')).toHaveLength(orders.length);
    expect(both.events.filter((e) => e.type === 'refund.finalized')).toHaveLength(orders.length / 2);
    const repeated = await pageToEnd('type=order.pending&type=refund.finalized');
    expect(repeated.events).toEqual(both.events);

    const orderId = orders[0] as string;
    const mine = await pageToEnd(`orderId=${orderId}`);
    expect(mine.events.map((e) => [e.type, e.data.sequence])).toEqual([
      ['order.pending', 1],
      ['order.waiting_for_confirmation', 2],
      ['order.completed', 3],
      ['refund.finalized', 4],
    ]);

    const stored = await outbox();
    const middle = stored.slice(5, 12);
    const since = (middle[0] as { created_at: Date }).created_at;
    const until = (stored[12] as { created_at: Date }).created_at;
    const ranged = await pageToEnd(
      `since=${encodeURIComponent(since.toISOString())}&until=${encodeURIComponent(until.toISOString())}`,
    );
    // Stored times keep microseconds; the range's are milliseconds: compare what is unambiguous.
    const inRange = stored
      .filter((r) => r.created_at.getTime() >= since.getTime() && r.created_at.getTime() < until.getTime())
      .map((r) => (JSON.parse(r.message) as CloudEvent).id);
    expect(ranged.events.map((e) => e.id)).toEqual(inRange);
  });

  it('When a page ends, then the next one starts right after it, and paging on later finds what came since', async () => {
    const first = await page('/events?limit=5');
    expect(first.more).toBe(true);
    const rest = await pageToEnd('limit=5', first.next);
    const all = await pageToEnd('limit=100');
    expect([...first.events, ...rest.events]).toEqual(all.events);

    const end = await page('/events?limit=1000');
    expect(end.more).toBe(false);
    const orderId = uniqueId('LATER');
    await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
    await waitUntil('the new event published', async () => (await pendingEvents()) === 0);
    const later = await page(`/events?after=${end.next as string}`);
    expect(later.events.map((e) => e.subject)).toEqual([orderId]);
  });

  it('When a transaction still running writes an event stored before one already committed, then the feed waits for it rather than skip it', async () => {
    const event = (id: string, orderId: string) =>
      JSON.stringify({
        specversion: '1.0',
        id,
        source: 'urn:test',
        type: 'order.pending',
        subject: orderId,
        time: new Date().toISOString(),
        datacontenttype: 'application/json',
        dataschema: 'urn:payment-notification-receiver:events:v1:order',
        data: {},
      });
    const [{ id: firstId } = { id: '' }, { id: secondId } = { id: '' }] = await query<{ id: string }>(
      svc.database.url,
      'SELECT gen_random_uuid() AS id UNION ALL SELECT gen_random_uuid()',
    );
    const end = await page('/events?limit=1000');
    const slow = new pg.Client({ connectionString: svc.database.url });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      const slowOrder = uniqueId('SLOW');
      await slow.query(
        `INSERT INTO outbox_events (id, order_id, sequence, type, message, published_at)
                        VALUES ($1, $2, 1, 'order.pending', $3, now())`,
        [firstId, slowOrder, event(firstId, slowOrder)],
      );
      const quickOrder = uniqueId('QUICK');
      await query(
        svc.database.url,
        `INSERT INTO outbox_events (id, order_id, sequence, type, message, published_at)
         VALUES ($1, $2, 1, 'order.pending', $3, now())`,
        [secondId, quickOrder, event(secondId, quickOrder)],
      );
      const meanwhile = await page(`/events?after=${end.next as string}`);
      expect(meanwhile.events).toEqual([]);
      await slow.query('COMMIT');
      const after = await page(`/events?after=${end.next as string}`);
      expect(after.events.map((e) => e.id)).toEqual([firstId, secondId]);
    } finally {
      await slow.end();
      await query(svc.database.url, 'DELETE FROM outbox_events WHERE id = ANY($1)', [[firstId, secondId]]);
    }
  });

  it('When a type is rare, then a page reads at most 5,000 stored events, says there is more, and the next page finds it', async () => {
    const end = await page('/events?limit=1000');
    const bulk = uniqueId('BULK');
    // 5,100 events of another type, then the one asked for.
    await query(
      svc.database.url,
      `INSERT INTO outbox_events (id, order_id, sequence, type, message, created_at, published_at)
       SELECT gen_random_uuid(), $1::text, n, CASE WHEN n <= 5100 THEN 'order.pending' ELSE 'refund.canceled' END,
              json_build_object('specversion', '1.0', 'id', gen_random_uuid(), 'source', 'urn:test',
                'type', CASE WHEN n <= 5100 THEN 'order.pending' ELSE 'refund.canceled' END, 'subject', $1,
                'time', to_json(now()), 'datacontenttype', 'application/json', 'data', json_build_object())::text,
              clock_timestamp(), now()
         FROM generate_series(1, 5101) AS n`,
      [bulk],
    );
    try {
      const first = await page(`/events?type=refund.canceled&limit=10&after=${end.next as string}`);
      expect(first).toEqual({ events: [], next: expect.any(String), more: true });
      const second = await page(`/events?type=refund.canceled&limit=10&after=${first.next as string}`);
      expect(second.events.map((e) => [e.type, e.subject])).toEqual([['refund.canceled', bulk]]);
      expect(second.more).toBe(false);
    } finally {
      await query(svc.database.url, 'DELETE FROM outbox_events WHERE order_id = $1', [bulk]);
    }
  });

  it.each([
    ['a bad cursor', 'after=bm90LWEtY3Vyc29y', 'after'],
    ['a cursor that is not base64url', 'after=%2F%2F', 'after'],
    ['a time without an offset', 'since=2026-11-28T10:00:00', 'since'],
    ['a time that is not one', 'until=yesterday', 'until'],
    ['an unknown type', 'type=order.shipped', 'type'],
    ['a range reversed', 'since=2026-11-28T10:00:00Z&until=2026-11-28T09:00:00Z', 'until'],
    ['a limit of 0', 'limit=0', 'limit'],
    ['a limit too large', 'limit=1001', 'limit'],
    ['a parameter given twice', 'since=2026-11-28T10:00:00Z&since=2026-11-28T11:00:00Z', 'since'],
    ['an order id that cannot be one', 'orderId=..', 'orderId'],
  ])('When the feed is asked with %s, then 400 invalid_query names the parameter', async (_what, params, name) => {
    const res = await svc.admin.get(`/events?${params}`).set(auth).expect(400);
    expect(res.body).toEqual({
      error: { code: 'invalid_query', message: expect.stringMatching(new RegExp(`^${name}: `)) },
    });
  });

  it('When the token is missing, then the feed and the replay answer 401', async () => {
    await svc.admin.get('/events').expect(401);
    await svc.admin.post('/events/replay').send({ queue: 'q' }).expect(401);
  });
});

describe('the replay into a team queue', () => {
  let broker: ChannelModel;
  beforeAll(async () => {
    broker = await amqp.connect(AMQP_URL);
  });
  afterAll(() => broker.close());

  interface TestQueue {
    queue: string;
    /** The messages received, once there are `count`. */
    read(count: number): Promise<ConsumeMessage[]>;
    /** Every message that came before a sentinel sent now (whatever was confirmed before is ahead of it). */
    drain(): Promise<ConsumeMessage[]>;
  }

  /** A queue of the test's own (bound to the service's exchange when `bindTo` is given), consumed. */
  async function declareQueue(bindTo?: string): Promise<TestQueue> {
    const channel = await broker.createConfirmChannel();
    const { queue } = await channel.assertQueue('', { exclusive: true });
    if (bindTo) await channel.bindQueue(queue, svc.exchange, bindTo);
    const received: ConsumeMessage[] = [];
    await channel.consume(queue, (m) => m && received.push(m), { noAck: true });
    const read = async (count: number): Promise<ConsumeMessage[]> => {
      await waitUntil(`${count} message(s) in ${queue}`, () => received.length >= count);
      return received;
    };
    return {
      queue,
      read,
      async drain() {
        const sentinel = uniqueId('SENTINEL');
        channel.sendToQueue(queue, Buffer.from(sentinel), { messageId: sentinel });
        await channel.waitForConfirms();
        await waitUntil('the sentinel', () => received.some((m) => m.properties.messageId === sentinel));
        return received.filter((m) => m.properties.messageId !== sentinel);
      },
    };
  }

  it('When a team replays into its queue, then only that queue gets the events, with their ids, times and a replay header', async () => {
    const team = await declareQueue();
    const bystander = await declareQueue('#');
    const orderId = orders[1] as string;
    const res = await svc.admin
      .post('/events/replay')
      .set(auth)
      .send({ queue: team.queue, orderId, type: ['order.pending', 'order.completed'] })
      .expect(200);
    expect(res.body).toEqual({ queue: team.queue, replayed: 2, next: expect.any(String), more: false });
    const messages = await team.read(2);
    const stored = await query<{ id: string; message: string; created_at: Date }>(
      svc.database.url,
      `SELECT id, message, created_at FROM outbox_events WHERE order_id = $1 AND type IN ('order.pending', 'order.completed')
        ORDER BY sequence`,
      [orderId],
    );
    expect(messages.map((m) => m.content.toString('utf8'))).toEqual(stored.map((s) => s.message));
    for (const [i, m] of messages.entries()) {
      expect(eventContractProblems({ ...m, fields: { routingKey: m.properties.type as string } })).toEqual([]);
      expect(m.properties.messageId).toBe(stored[i]?.id);
      expect(m.properties.timestamp).toBe(Math.floor((stored[i]?.created_at.getTime() ?? 0) / 1000));
      expect(m.properties.headers?.['replayed-at']).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(m.fields.exchange).toBe('');
    }
    // Published to that queue alone: a queue bound to everything on the exchange gets nothing, nor does the
    // consumer of order.completed.
    expect(await bystander.drain()).toEqual([]);
    expect(consumer.messages).toHaveLength(orders.length);
    // An action on the record (issue 45): by the token's holder, through the api, on the order's page.
    expect(
      await query(
        svc.database.url,
        "SELECT actor, via, target, result FROM console_audit WHERE action = 'events_replay' AND order_id = $1",
        [orderId],
      ),
    ).toEqual([{ actor: 'admin', via: 'api', target: `queue ${team.queue}`, result: 'replayed 2' }]);
  });

  it('When a page of another site asks for a replay, then 403 and nothing is published', async () => {
    const team = await declareQueue();
    const res = await svc.admin
      .post('/events/replay')
      .set(auth)
      .set('Origin', 'https://evil.example')
      .send({ queue: team.queue, orderId: orders[1] as string });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('cross_site_request');
    expect(await team.drain()).toEqual([]);
  });

  it('When a replay is larger than a call, then calls with the cursor replay the rest, none twice', async () => {
    const team = await declareQueue();
    const total = (await outbox()).length;
    let after: string | null = null;
    let calls = 0;
    for (;;) {
      const body: { replayed: number; next: string; more: boolean } = (
        await svc.admin
          .post('/events/replay')
          .set(auth)
          .send({ queue: team.queue, limit: 7, ...(after ? { after } : {}) })
          .expect(200)
      ).body;
      calls += 1;
      after = body.next;
      if (!body.more) break;
    }
    const ids = (await team.read(total)).map((m) => m.properties.messageId as string);
    expect(new Set(ids).size).toBe(total);
    expect(ids).toHaveLength(total);
    expect(calls).toBe(Math.ceil(total / 7));
  });

  it('When the queue does not exist, then 404 queue_not_found and nothing is published', async () => {
    const watcher = await declareQueue('#');
    const res = await svc.admin
      .post('/events/replay')
      .set(auth)
      .send({ queue: `no-such-queue-${uniqueId('Q')}` })
      .expect(404);
    expect(res.body.error.code).toBe('queue_not_found');
    expect(await watcher.drain()).toEqual([]);
  });

  it.each([
    ['a reversed range', { since: '2026-11-28T10:00:00Z', until: '2026-11-28T09:00:00Z' }, 'until'],
    ['no queue', { queue: undefined }, 'queue'],
    ['a queue name too long', { queue: 'q'.repeat(256) }, 'queue'],
    ['an unknown type', { type: ['order.shipped'] }, 'type'],
  ])('When a replay is asked with %s, then 400 names it and nothing is published', async (_what, given, name) => {
    const team = await declareQueue();
    const res = await svc.admin
      .post('/events/replay')
      .set(auth)
      .send({ queue: team.queue, ...given })
      .expect(400);
    expect(res.body.error).toEqual({ code: 'invalid_query', message: expect.stringMatching(new RegExp(`^${name}: `)) });
    expect(await team.drain()).toEqual([]);
  });
});
