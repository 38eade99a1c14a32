import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import pg from 'pg';
import { encodeCursor } from '../../../src/admin/eventRoutes';
import { AMQP_URL, EventConsumer, uniqueExchange } from '../../support/broker';
import { fromAddress, signInFrom } from '../../support/console';
import { eventContractProblems } from '../../support/contracts';
import { query, testDatabase } from '../../support/database';
import { FaultProxy } from '../../support/faultProxy';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';
import { pendingEvents as pendingEventsIn } from '../../support/outbox';

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
/** A downstream team whose queues are named billing.*. */
const TEAM_TOKEN = 'billing-team-token-0123456';
const teamAuth = { Authorization: `Bearer ${TEAM_TOKEN}` };
const TEAMS = `billing:${TEAM_TOKEN}:billing.`;

let svc: TestService;
let consumer: EventConsumer;
const orders = Array.from({ length: 6 }, () => uniqueId('FEED'));

const pendingEvents = (): Promise<number> => pendingEventsIn(svc.database.url);

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
  svc = await startTestService({ env: { AMQP_EXCHANGE: exchange, ADMIN_TOKEN: TOKEN, EVENT_TEAM_TOKENS: TEAMS } });
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

  /**
   * A queue of the test's own, named (billing.* unless said: the team's), deleted once the test's consumer goes;
   * bound to the service's exchange when `bindTo` is given; consumed. `exclusive`: held by this connection alone
   * (server-named when no name is given), which no replay may publish to.
   */
  async function declareQueue(
    bindTo?: string,
    { name = `billing.${uniqueId('Q')}`, exclusive = false }: { name?: string; exclusive?: boolean } = {},
  ): Promise<TestQueue> {
    const channel = await broker.createConfirmChannel();
    const { queue } = await channel.assertQueue(name, { exclusive, autoDelete: true });
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
  /** How many replays the audit trail holds. */
  const replayCount = async (): Promise<number> =>
    (
      await query<{ n: number }>(
        svc.database.url,
        "SELECT count(*)::int AS n FROM console_audit WHERE action = 'events_replay'",
      )
    )[0]?.n ?? 0;

  /** The audit rows of replays into `queue`. */
  const replaysInto = (queue: string) =>
    query(
      svc.database.url,
      "SELECT actor, role, via, result FROM console_audit WHERE action = 'events_replay' AND target = $1",
      [`queue ${queue}`],
    );

  it("When a team's token reads the feed and replays into a queue of its prefix, then both are served, and the audit names the team", async () => {
    const feed = (await svc.admin.get('/events?limit=3').set(teamAuth).expect(200)).body as EventPage;
    expect(feed.events).toHaveLength(3);
    const team = await declareQueue();
    const orderId = orders[2] as string;
    const res = await svc.admin.post('/events/replay').set(teamAuth).send({ queue: team.queue, orderId }).expect(200);
    const replayed = (res.body as { replayed: number }).replayed;
    expect(replayed).toBeGreaterThan(0);
    expect(await team.read(replayed)).toHaveLength(replayed);
    expect(await replaysInto(team.queue)).toEqual([
      { actor: 'billing', role: 'team', via: 'api', result: `replayed ${replayed}` },
    ]);
  });

  it('When a team replays into a queue outside its prefix, then 403 queue_not_allowed and nothing is published; its token opens no other route, and signs in to no console', async () => {
    const other = await declareQueue(undefined, { name: `ledger.${uniqueId('Q')}` });
    const res = await svc.admin.post('/events/replay').set(teamAuth).send({ queue: other.queue }).expect(403);
    expect(res.body.error).toEqual({
      code: 'queue_not_allowed',
      message: 'the team billing replays only into queues whose names start with billing.; nothing was published',
    });
    expect(await other.drain()).toEqual([]);
    expect(await replaysInto(other.queue)).toEqual([]);
    // ADMIN_TOKEN replays there: the prefix binds teams only.
    await svc.admin.post('/events/replay').set(auth).send({ queue: other.queue, orderId: orders[0] }).expect(200);

    const orderId = orders[0] as string;
    for (const call of [
      svc.admin.get(`/orders/${orderId}`),
      svc.admin.get('/refunds/ANY'),
      svc.admin.post(`/orders/${orderId}/reconcile`),
    ]) {
      const refused = await call.agent(fromAddress('127.0.0.6')).set(teamAuth);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toEqual({
        code: 'token_not_allowed',
        message: 'the token of the team billing opens only GET /events and POST /events/replay',
      });
    }
    const console = await signInFrom(svc.adminUrl, '127.0.0.6', TEAM_TOKEN);
    expect(console.status).toBe(403);
    expect(console.text).toContain('does not sign in to the console');
    expect(console.headers['set-cookie']).toBeUndefined();
    // A right token at the wrong door is no guess: nothing counts against the address.
    expect(
      await query(svc.database.url, "SELECT failures FROM console_sign_in_failures WHERE source = '127.0.0.6'"),
    ).toEqual([]);
  });

  it('When ADMIN_TOKEN replays into an amq.* queue or one another connection holds exclusively, then 403 says why and nothing is published', async () => {
    // What `events watch` makes: a server-named queue, exclusive to its connection.
    const watcher = await declareQueue('#', { name: '', exclusive: true });
    expect(watcher.queue).toMatch(/^amq\.gen-/);
    const named = await declareQueue(undefined, { exclusive: true });
    const serverNamed = await svc.admin.post('/events/replay').set(auth).send({ queue: watcher.queue }).expect(403);
    expect(serverNamed.body.error.code).toBe('queue_not_allowed');
    expect(serverNamed.body.error.message).toMatch(/is a name of the broker's own \(amq\.\*/);
    for (const token of [auth, teamAuth]) {
      const locked = await svc.admin.post('/events/replay').set(token).send({ queue: named.queue }).expect(403);
      expect(locked.body.error).toEqual({
        code: 'queue_not_allowed',
        message: `the queue ${named.queue} is held exclusively by another connection (a consumer's own queue): it is not yours to replay into; nothing was published`,
      });
    }
    expect(await watcher.drain()).toEqual([]);
    expect(await named.drain()).toEqual([]);
    // Refused before the broker was asked (amq.*), or after asking it but before anything went out: each on the
    // record as refused, none as published.
    expect(await replaysInto(watcher.queue)).toEqual([]);
    expect((await replaysInto(named.queue)).map((r) => r.result)).toEqual([
      'refused: the queue is held exclusively by another connection',
      'refused: the queue is held exclusively by another connection',
    ]);
  });

  it.each([
    ['a NUL in the queue name', { queue: 'billing.a\u0000b' }, 'queue', 'holds a control character'],
    ['a line break in the queue name', { queue: 'billing.a\nb' }, 'queue', 'holds a control character'],
    ['a right-to-left override in the queue name', { queue: 'billing.\u202eq' }, 'queue', 'format character'],
    ['a lone surrogate in the queue name', { queue: 'billing.\ud800' }, 'queue', 'lone surrogate'],
    ['a NUL in the order id', { orderId: 'A\u0000' }, 'orderId', 'holds a control character'],
    ['a NUL in a type', { type: ['order.completed\u0000'] }, 'type', 'holds a control character'],
    ['a NUL in the cursor', { after: 'abc\u0000' }, 'after', 'holds a control character'],
    ['a NUL in a time', { since: '2026-11-28T10:00:00Z\u0000' }, 'since', 'holds a control character'],
  ])(
    'When a replay is asked with %s, then 400 before the broker or the database is asked: no audit row, nothing published',
    async (_what, given, name, problem) => {
      const team = await declareQueue();
      const before = await replayCount();
      const res = await svc.admin
        .post('/events/replay')
        .set(auth)
        .send({ queue: team.queue, ...given })
        .expect(400);
      expect(res.body.error.code).toBe('invalid_query');
      expect(res.body.error.message).toMatch(new RegExp(`^${name}: .*${problem}`));
      expect(await team.drain()).toEqual([]);
      expect(await replayCount()).toBe(before);
    },
  );

  it('When a cursor or a time names the year 0000, then the feed and the replay answer 400 invalid_query, and no replay is recorded', async () => {
    const [{ id } = { id: '' }] = await query<{ id: string }>(svc.database.url, 'SELECT gen_random_uuid() AS id');
    const yearZero = encodeCursor({ at: '0000-06-01T00:00:00+00:00', id });
    const intoYearZero = encodeCursor({ at: '0001-01-01T00:00:00+01:00', id });
    for (const cursor of [yearZero, intoYearZero]) {
      const feed = await svc.admin.get(`/events?after=${cursor}`).set(auth).expect(400);
      expect(feed.body.error).toEqual({ code: 'invalid_query', message: 'after: not a cursor this feed gave' });
    }
    const since = await svc.admin.get(`/events?since=${encodeURIComponent('0000-01-01T00:00:00Z')}`).set(auth);
    expect(since.status).toBe(400);
    expect(since.body.error.message).toBe('since: outside the years 0001 to 9999');
    const team = await declareQueue();
    const replay = await svc.admin.post('/events/replay').set(auth).send({ queue: team.queue, after: yearZero });
    expect(replay.status).toBe(400);
    expect(replay.body.error.code).toBe('invalid_query');
    expect(await team.drain()).toEqual([]);
    expect(await replaysInto(team.queue)).toEqual([]);
  });

  it('When a replay or the feed names binding patterns, then they take the types a binding would; a pattern that matches none gets 400 listing the types', async () => {
    const orderId = orders[0] as string;
    const team = await declareQueue();
    const res = await svc.admin
      .post('/events/replay')
      .set(auth)
      .send({ queue: team.queue, orderId, type: ['refund.#', '*.completed'] })
      .expect(200);
    expect(res.body.replayed).toBe(2);
    expect((await team.read(2)).map((m) => m.properties.type as string)).toEqual([
      'order.completed',
      'refund.finalized',
    ]);
    const feed = (await svc.admin.get(`/events?orderId=${orderId}&type=order.*`).set(auth).expect(200))
      .body as EventPage;
    expect(feed.events.map((e) => e.type)).toEqual([
      'order.pending',
      'order.waiting_for_confirmation',
      'order.completed',
    ]);
    const encoded = (
      await svc.admin
        .get(`/events?orderId=${orderId}&type=${encodeURIComponent('#.finalized')}`)
        .set(auth)
        .expect(200)
    ).body as EventPage;
    expect(encoded.events.map((e) => e.type)).toEqual(['refund.finalized']);

    for (const pattern of ['refund.*.*', 'order.shipped']) {
      const none = await svc.admin
        .post('/events/replay')
        .set(auth)
        .send({ queue: team.queue, type: [pattern] });
      expect(none.status).toBe(400);
      expect(none.body.error.message).toBe(
        `type: "${pattern}" matches no event type (the types: order.pending, order.waiting_for_confirmation, ` +
          'order.completed, order.canceled, order.status_conflict, refund.pending, refund.finalized, refund.canceled, ' +
          'refund.status_conflict; a pattern such as refund.# or order.* takes several)',
      );
    }
    expect(await team.drain()).toHaveLength(2);
  });
});

describe('a replay on the record whatever happens after', () => {
  const database = testDatabase();
  let proxy: FaultProxy;
  let svc: TestService;
  let broker: ChannelModel;

  beforeAll(async () => {
    proxy = await new FaultProxy(5432).start();
    svc = await startTestService({
      database,
      databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
      env: { ADMIN_TOKEN: TOKEN, RELAY_ENABLED: 'false' },
    });
    broker = await amqp.connect(AMQP_URL);
  });
  afterAll(async () => {
    await broker.close();
    await svc.stop();
    await proxy.stop();
    await database.drop();
  });

  it('When the database fails once events are going out, then the replay answers an error and its audit row, written before the first one went, is there', async () => {
    const orderId = uniqueId('MANY');
    // More than a page: the replay publishes the first 500, then reads the next page.
    await query(
      database.url,
      `INSERT INTO outbox_events (id, order_id, sequence, type, message, created_at, published_at)
       SELECT gen_random_uuid(), $1::text, n, 'order.pending',
              json_build_object('specversion', '1.0', 'id', gen_random_uuid(), 'source', 'urn:test',
                'type', 'order.pending', 'subject', $1, 'time', to_json(now()),
                'datacontenttype', 'application/json', 'data', json_build_object())::text,
              clock_timestamp(), now()
         FROM generate_series(1, 1200) AS n`,
      [orderId],
    );
    const channel = await broker.createChannel();
    const queue = `team.${uniqueId('Q')}`;
    await channel.assertQueue(queue, { autoDelete: true });
    let received = 0;
    await channel.consume(queue, () => void (received += 1), { noAck: true });
    // Every round trip to the database takes 400 ms: the failure below lands while the replay still publishes its
    // first page, before it reads the next.
    proxy.latencyMs = 200;
    const replay = svc.admin
      .post('/events/replay')
      .set(auth)
      .send({ queue, orderId })
      .then((r) => r);
    await waitUntil('the first replayed event', () => received > 0, 30_000, 5);
    proxy.reset();
    const res = await replay;
    proxy.latencyMs = 0;
    proxy.pass();
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(
      await query(
        database.url,
        "SELECT actor, via, target, result FROM console_audit WHERE action = 'events_replay' AND order_id = $1",
        [orderId],
      ),
    ).toEqual([{ actor: 'admin', via: 'api', target: `queue ${queue}`, result: 'publishing' }]);
    await channel.close();
  }, 60_000);
});
