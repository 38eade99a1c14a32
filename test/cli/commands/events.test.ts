import { randomUUID } from 'node:crypto';
import type { ReplayedEvent } from '../../../src/cli/commands/events';
import amqp, { type Channel } from 'amqplib';
import { AMQP_URL, deleteExchange, EventConsumer, uniqueExchange } from '../../support/broker';
import { FaultProxy } from '../../support/faultProxy';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';
import { cliEnv, parseJson, runCli, startCli } from '../cliSupport';
import { pendingEvents } from '../../support/outbox';

interface ReplayReport {
  dryRun: boolean;
  selected: number;
  counts: Record<string, number>;
  missing: string[];
  events: ReplayedEvent[];
}

interface Stored {
  id: string;
  order_id: string;
  type: string;
  message: string;
}

let svc: TestService;
let consumer: EventConsumer;
let env: Record<string, string>;
const orderA = uniqueId('EVA');
const orderB = uniqueId('EVB');
let stored: Stored[];

beforeAll(async () => {
  svc = await startTestService();
  consumer = await new EventConsumer(svc.exchange).start();
  env = cliEnv({ DATABASE_URL: svc.database.url, AMQP_EXCHANGE: svc.exchange });
  for (const body of [
    orderBody({ orderId: orderA, status: 'PENDING' }),
    orderBody({ orderId: orderA, status: 'COMPLETED', payMethodType: 'PBL' }),
    refundBody({ orderId: orderA, refundId: uniqueId('RA'), status: 'FINALIZED' }),
    orderBody({ orderId: orderB, status: 'PENDING' }),
  ]) {
    expect((await svc.post(body)).status).toBe(200);
  }
  await consumer.waitFor(4);
  stored = await waitUntil('the four events stored and published', async () => {
    const rows = await query<Stored>(
      svc.database.url,
      'SELECT id, order_id, type, message FROM outbox_events ORDER BY order_id, sequence',
    );
    return rows.length === 4 && (await pendingEvents(svc.database.url)) === 0 ? rows : undefined;
  });
}, 180_000);
afterAll(async () => {
  await svc.stop();
  await consumer.stop(); // last: it throws when an event did not match the contract
});

/** Runs `work` on a channel of a connection of its own, closed afterwards. */
async function withChannel<T>(work: (channel: Channel) => Promise<T>): Promise<T> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    return await work(await connection.createChannel());
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Messages the consumer got after the first `from`. */
const since = (from: number): amqp.ConsumeMessage[] => consumer.messages.slice(from);

describe('events replay', () => {
  it('When the events of an order are replayed, then the same ids and message bytes are published again and confirmed', async () => {
    const before = consumer.messages.length;
    const run = await runCli(['events', 'replay', '--order', orderA, '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<ReplayReport>(run);
    const ofA = stored.filter((s) => s.order_id === orderA);
    expect(report.events.map((e) => [e.id, e.type, e.result, e.publishedByRelay])).toEqual(
      ofA.map((s) => [s.id, s.type, 'confirmed', true]),
    );
    expect(report.counts).toEqual({ confirmed: 3 });
    await consumer.waitFor(before + 3);
    const replayed = since(before);
    expect(replayed.map((m) => m.properties.messageId)).toEqual(ofA.map((s) => s.id));
    replayed.forEach((m, i) => {
      expect(m.content.toString('utf8')).toBe(ofA[i]?.message);
      expect(m.fields.routingKey).toBe(ofA[i]?.type);
      expect(m.properties).toMatchObject({
        type: ofA[i]?.type,
        contentType: 'application/cloudevents+json',
        deliveryMode: 2,
      });
    });
  });

  it('When one event is replayed by id with --dry-run, then it is listed and nothing is published', async () => {
    const target = stored[3] as Stored;
    const before = consumer.messages.length;
    const run = await runCli(['events', 'replay', '--id', target.id, '--dry-run', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<ReplayReport>(run);
    expect(report).toMatchObject({ dryRun: true, selected: 1, counts: { 'would publish': 1 } });
    expect(report.events[0]?.id).toBe(target.id);
    // A real replay right after is the first message the consumer sees: the dry run sent nothing.
    expect((await runCli(['events', 'replay', '--id', target.id, '--json'], env)).code).toBe(0);
    await consumer.waitFor(before + 1);
    expect(since(before).map((m) => m.properties.messageId)).toEqual([target.id]);
  });

  it('When a time range is given, then only events created in it are replayed', async () => {
    await query(
      svc.database.url,
      `UPDATE outbox_events SET created_at = now() - interval '3 hours' WHERE order_id = $1`,
      [orderB],
    );
    const run = await runCli(
      [
        'events',
        'replay',
        '--until',
        '2h',
        '--since',
        new Date(Date.now() - 4 * 3_600_000).toISOString(),
        '--dry-run',
        '--json',
      ],
      env,
    );
    expect(run.code).toBe(0);
    expect(parseJson<ReplayReport>(run).events.map((e) => e.orderId)).toEqual([orderB]);
  });

  it('When an id is not stored, then it is reported missing and the exit code is 1', async () => {
    const unknown = randomUUID();
    const run = await runCli(['events', 'replay', '--id', unknown, '--id', (stored[0] as Stored).id, '--json'], env);
    expect(run.code).toBe(1);
    const report = parseJson<ReplayReport>(run);
    expect(report.missing).toEqual([unknown]);
    expect(report.counts).toEqual({ confirmed: 1 });
  });

  it('When no queue is bound to the exchange, then the broker returns the events and the replay says they were unrouted', async () => {
    const lonely = uniqueExchange();
    await withChannel(async (channel) => {
      await channel.assertExchange(lonely, 'topic', { durable: false, autoDelete: false });
    });
    try {
      const run = await runCli(['events', 'replay', '--order', orderA, '--exchange', lonely], env);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/0 confirmed, 3 not \(3 unrouted: no queue bound/);
    } finally {
      await deleteExchange(lonely);
    }
  });

  it('When the exchange does not exist, then it says so, publishes nothing and declares nothing', async () => {
    const missing = uniqueExchange();
    const run = await runCli(['events', 'replay', '--order', orderA, '--exchange', missing], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`the exchange ${missing} does not exist on the broker; nothing was published`);
    await withChannel(async (channel) => {
      channel.on('error', () => undefined); // the broker closes a channel that checks for a missing exchange
      await expect(channel.checkExchange(missing)).rejects.toThrow(/404/);
    });
  });

  it('When replayed to one queue, then only that queue gets the events, with their ids, original timestamps and a replay header', async () => {
    await withChannel(async (channel) => {
      const { queue } = await channel.assertQueue(`cli.replay.${uniqueId('Q')}`);
      const before = consumer.messages.length;
      const run = await runCli(
        ['events', 'replay', '--order', orderA, '--type', 'order.completed', '--queue', queue, '--json'],
        env,
      );
      expect(run.code).toBe(0);
      expect(parseJson<ReplayReport>(run).counts).toEqual({ confirmed: 1 });
      const message = await waitUntil(
        'the replayed event',
        async () => (await channel.get(queue, { noAck: true })) || undefined,
      );
      const [row] = await query<{ id: string; message: string; created_at: Date }>(
        svc.database.url,
        `SELECT id, message, created_at FROM outbox_events WHERE order_id = $1 AND type = 'order.completed'`,
        [orderA],
      );
      expect(message.content.toString('utf8')).toBe(row?.message);
      expect(message.properties.messageId).toBe(row?.id);
      expect(message.properties.timestamp).toBe(Math.floor((row?.created_at.getTime() ?? 0) / 1000));
      expect(message.properties.headers?.['replayed-at']).toMatch(/^\d{4}-/);
      // Through the default exchange: the consumer bound to the service's exchange got nothing more (the replay
      // to the exchange just after is the next thing it sees).
      expect((await runCli(['events', 'replay', '--id', row?.id ?? '', '--json'], env)).code).toBe(0);
      await consumer.waitFor(before + 1);
      expect(since(before).map((m) => m.properties.messageId)).toEqual([row?.id]);
      await channel.deleteQueue(queue);
    });
  });

  it('When the queue is amq.* or another connection holds it exclusively, then it refuses and publishes nothing', async () => {
    await withChannel(async (channel) => {
      const { queue: serverNamed } = await channel.assertQueue('', { exclusive: true });
      const { queue: locked } = await channel.assertQueue(`cli.locked.${uniqueId('Q')}`, { exclusive: true });
      const amq = await runCli(['events', 'replay', '--order', orderA, '--queue', serverNamed], env);
      expect(amq.code).toBe(2);
      expect(amq.stderr).toContain(`--queue ${serverNamed}: a name of the broker's own`);
      const held = await runCli(['events', 'replay', '--order', orderA, '--queue', locked], env);
      expect(held.code).toBe(1);
      expect(held.stderr).toContain(`the queue ${locked} is held exclusively by another connection`);
      for (const queue of [serverNamed, locked]) expect((await channel.checkQueue(queue)).messageCount).toBe(0);
      expect(
        await query(svc.database.url, "SELECT 1 FROM console_audit WHERE action = 'events_replay' AND detail LIKE $1", [
          `%queue ${locked}`,
        ]),
      ).toEqual([]);
    });
  });

  it('When events are replayed, then each order is on the record before the first one goes out, and says how it ended; --type takes binding patterns', async () => {
    const before = consumer.messages.length;
    const run = await runCli(['events', 'replay', '--order', orderA, '--type', 'order.*', '--json'], env);
    expect(run.code).toBe(0);
    expect(parseJson<ReplayReport>(run).events.map((e) => e.type)).toEqual(['order.pending', 'order.completed']);
    await consumer.waitFor(before + 2);
    const rows = await query<{ actor: string; via: string; result: string; detail: string }>(
      svc.database.url,
      "SELECT actor, via, result, detail FROM console_audit WHERE action = 'events_replay' AND order_id = $1 ORDER BY id",
      [orderA],
    );
    expect(rows.at(-1)).toEqual({
      actor: expect.stringMatching(/@/),
      via: 'command line',
      result: 'published',
      detail: `2 of 2 event(s) selected (1 order(s), types order.pending order.waiting_for_confirmation order.completed order.canceled order.status_conflict) to exchange ${svc.exchange}`,
    });
    expect(rows.every((r) => r.result !== 'publishing')).toBe(true);
    const none = await runCli(['events', 'replay', '--order', orderA, '--type', 'refund.*.*'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--type refund.*.*: matches no event type (order.pending,');
  });

  it('When the queue does not exist or the range is reversed, then it says so and publishes nothing', async () => {
    const missing = await runCli(['events', 'replay', '--order', orderA, '--queue', `no-such-${uniqueId('Q')}`], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/the queue no-such-\S+ does not exist on the broker; nothing was published/);
    const reversed = await runCli(['events', 'replay', '--since', '1h', '--until', '2h'], env);
    expect(reversed.code).toBe(2);
    expect(reversed.stderr).toContain('--until is not after --since');
  });

  it('When nothing matches, then it says so and exits 1', async () => {
    const run = await runCli(['events', 'replay', '--order', 'NO-SUCH-ORDER'], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no stored event matches');
  });
});

describe('events watch', () => {
  it('When watching with --json, then each published event is printed as one JSON line with its routing key and id', async () => {
    const watcher = startCli(
      ['events', 'watch', '--binding-key', 'order.*', '--count', '2', '--timeout', '20s', '--json'],
      env,
    );
    await watcher.stderrIncludes('watching exchange');
    const orderId = uniqueId('WATCH');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    expect((await svc.post(orderBody({ orderId, status: 'CANCELED' }))).status).toBe(200);
    const run = await watcher.result;
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('lost the broker connection'); // its own close at the end is no loss
    const lines = run.stdout
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            routingKey: string;
            messageId: string;
            event: { subject: string; data: { status: string } };
          },
      );
    expect(lines.map((l) => [l.routingKey, l.event.subject, l.event.data.status])).toEqual([
      ['order.pending', orderId, 'PENDING'],
      ['order.canceled', orderId, 'CANCELED'],
    ]);
    const ids = await query<{ id: string }>(
      svc.database.url,
      'SELECT id FROM outbox_events WHERE order_id = $1 ORDER BY sequence',
      [orderId],
    );
    expect(lines.map((l) => l.messageId)).toEqual(ids.map((r) => r.id));
  });

  it('When --count is not reached before --timeout, then it exits 1', async () => {
    const run = await runCli(
      ['events', 'watch', '--binding-key', 'nothing.will.match', '--count', '1', '--timeout', '500ms'],
      env,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('timed out after 0 of 1');
    expect(run.stderr).not.toContain('lost the broker connection');
  });

  it('When the broker connection is lost while watching, then it exits 1 with a clear message', async () => {
    const proxy = await new FaultProxy(5672).start();
    try {
      const watcher = startCli(['events', 'watch', '--binding-key', '#'], {
        ...env,
        AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`,
      });
      await watcher.stderrIncludes('watching exchange');
      proxy.reset();
      const run = await watcher.result;
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/lost the broker connection.* after 0 event\(s\)/);
      expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      await proxy.stop();
    }
  });
});
