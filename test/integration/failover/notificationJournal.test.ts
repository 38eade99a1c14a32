import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { Registry } from 'prom-client';
import { decodeMessage, type JournalEntry } from '../../../src/failover/journalEntries';
import {
  journalQueueArguments,
  NotificationJournal,
  type JournalSettings,
} from '../../../src/failover/notificationJournal';
import { createFailoverMetrics } from '../../../src/observability/failoverMetrics';
import { createLogger } from '../../../src/observability/logger';
import { AMQP_URL, deleteQueue } from '../../support/broker';
import { query } from '../../support/database';
import { FaultProxy } from '../../support/faultProxy';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

/**
 * The journal of recorded notifications (src/failover/notificationJournal.ts): what it keeps, how it is bounded,
 * where it lives, and that the intake never waits for it.
 */

const run = promisify(execFile);

/** Every message of a queue, taken off it, each decoded: the entries of each. */
async function messagesOf(queue: string, url = AMQP_URL): Promise<JournalEntry[][]> {
  const connection = await amqp.connect(url);
  try {
    const channel = await connection.createChannel();
    // A queue not there (yet) closes the channel: the caller is told, not the process.
    channel.on('error', () => undefined);
    const messages: JournalEntry[][] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return messages;
      const decoded = decodeMessage(message.content);
      if (!('entries' in decoded)) throw new Error('not a journal message of entries');
      messages.push(decoded.entries);
    }
  } finally {
    await connection.close();
  }
}

/** Every entry of a queue's messages, taken off it, in order. */
const drain = async (queue: string, url = AMQP_URL): Promise<JournalEntry[]> => (await messagesOf(queue, url)).flat();

/** An entry of no recorded notification, for the journal alone. */
const silentEntry: JournalEntry = {
  kind: 'notification',
  at: '2026-12-02T10:00:00.000Z',
  id: '1',
  sourceAddress: null,
  processingTimeMs: null,
  algorithm: 'md5',
  signature: '00112233445566778899aabbccddeeff',
  body: Buffer.from('{}').toString('base64'),
};

const backlogOf = async (registry: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> =>
  (await registry.get()).values[0]?.value ?? 0;

describe('When the service records notifications', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc.stop();
  });

  it('then its journal keeps each new one once: its exact body, signature and the place it was recorded in', async () => {
    const orderId = uniqueId('JRNL');
    const pending = orderBody({ orderId, status: 'PENDING' });
    const completed = orderBody({ orderId, status: 'COMPLETED', payMethodType: 'PBL' });
    await svc.post(pending).expect(200);
    await svc.post(pending).expect(200); // a duplicate: its notification is journaled already
    await svc.post(completed).expect(200);
    await waitUntil(
      'the journal confirmed every entry',
      async () => (await backlogOf(svc.service.metrics.failover.journalBacklog)) === 0,
    );
    const entries = await drain(svc.journalQueue);
    const stored = await query<{ id: string; status: string; at: string }>(
      svc.database.url,
      `SELECT id::text AS id, status, to_json(received_at)#>>'{}' AS at FROM notifications WHERE order_id = $1 ORDER BY id`,
      [orderId],
    );
    expect(entries.map((e) => Buffer.from(e.body, 'base64').toString('utf8'))).toEqual([pending, completed]);
    expect(entries.map((e) => ({ id: e.id, at: e.at }))).toEqual(stored.map((s) => ({ id: s.id, at: s.at })));
    expect(
      entries.every((e) => e.kind === 'notification' && e.sourceAddress === '127.0.0.1' && e.algorithm === 'md5'),
    ).toBe(true);
  });

  it('then its queue is a quorum queue that drops what is older than JOURNAL_RETENTION or past JOURNAL_MAX_BYTES', async () => {
    const settings: JournalSettings = {
      url: AMQP_URL,
      queue: svc.journalQueue,
      retentionMs: 3_600_000,
      maxBytes: 1024 ** 3,
    };
    const connection = await amqp.connect(AMQP_URL);
    try {
      const channel = await connection.createChannel();
      // Declaring a queue again with other arguments is refused: these are its arguments.
      await expect(
        channel.assertQueue(svc.journalQueue, { durable: true, arguments: journalQueueArguments(settings) }),
      ).resolves.toMatchObject({ queue: svc.journalQueue });
      const other = await connection.createChannel();
      other.on('error', () => undefined);
      await expect(
        other.assertQueue(svc.journalQueue, {
          durable: true,
          arguments: journalQueueArguments({ ...settings, retentionMs: 60_000 }),
        }),
      ).rejects.toMatchObject({ code: 406 });
    } finally {
      await connection.close().catch(() => undefined);
    }
  });
});

describe('When the journal is away', () => {
  it('then notifications are still answered 200, and nothing waits on it', async () => {
    const proxy = await new FaultProxy(5672).start();
    proxy.reset();
    const svc = await startTestService({ env: { JOURNAL_AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}` } });
    try {
      await svc.post(orderBody({ orderId: uniqueId('JAWAY'), status: 'PENDING' })).expect(200);
      expect(await backlogOf(svc.service.metrics.failover.journalBacklog)).toBe(1);
    } finally {
      await svc.stop();
      await proxy.stop();
    }
  });

  it('then a stop while the broker is silent (a partition) still ends, its entries counted as not confirmed', async () => {
    const proxy = await new FaultProxy(5672).start();
    const queue = `test.journal.${randomBytes(4).toString('hex')}`;
    const journal = new NotificationJournal(
      { url: `amqp://guest:guest@127.0.0.1:${proxy.port}`, queue, retentionMs: 3_600_000, maxBytes: 1024 ** 3 },
      createFailoverMetrics(new Registry()),
      createLogger('silent'),
    );
    try {
      journal.start();
      journal.append([silentEntry]);
      await waitUntil('the journal connected and confirming', () => journal.backlog === 0);
      proxy.silent();
      journal.append([silentEntry]);
      // Neither the confirm nor the close's answer ever comes: before, the close waited for the heartbeat (60 s).
      await journal.stop(1000);
      expect(journal.backlog).toBe(1);
    } finally {
      proxy.pass();
      await proxy.stop();
      await deleteQueue(queue);
    }
  }, 10_000);

  it('then its entries wait in memory within its bound, the oldest dropped and counted, and go once it is back', async () => {
    const proxy = await new FaultProxy(5672).start();
    proxy.reset();
    const queue = `test.journal.${randomBytes(4).toString('hex')}`;
    const metrics = createFailoverMetrics(new Registry());
    const entry = (i: number): JournalEntry => ({
      kind: 'notification',
      at: new Date(Date.UTC(2026, 11, 2, 10, 0, i)).toISOString(),
      id: String(i + 1),
      sourceAddress: null,
      processingTimeMs: null,
      algorithm: 'md5',
      signature: '00112233445566778899aabbccddeeff',
      body: Buffer.alloc(600, i).toString('base64'),
    });
    // Room for three entries of about 1.2 kB.
    const journal = new NotificationJournal(
      { url: `amqp://guest:guest@127.0.0.1:${proxy.port}`, queue, retentionMs: 3_600_000, maxBytes: 1024 ** 3 },
      metrics,
      createLogger('silent'),
      3 * 1250,
    );
    try {
      journal.start();
      journal.append([0, 1, 2, 3, 4].map(entry));
      expect(journal.backlog).toBe(3);
      expect((await metrics.journalEntries.get()).values.find((v) => v.labels.outcome === 'dropped')?.value).toBe(2);
      proxy.pass();
      await waitUntil('the backlog published', () => journal.backlog === 0, 30_000);
      expect((await drain(queue)).map((e) => e.id)).toEqual(['3', '4', '5']);
    } finally {
      await journal.stop(1000);
      await proxy.stop();
      await deleteQueue(queue);
    }
  });
});

describe('When transactions commit faster than the broker confirms', () => {
  it('then what commits while a message is unconfirmed leaves together in the next, every entry once, in order', async () => {
    // 20 ms each way to the broker: a confirm takes at least 40 ms, while a transaction commits every turn.
    const proxy = await new FaultProxy(5672).start();
    proxy.latencyMs = 20;
    const queue = `test.journal.${randomBytes(4).toString('hex')}`;
    const journal = new NotificationJournal(
      { url: `amqp://guest:guest@127.0.0.1:${proxy.port}`, queue, retentionMs: 3_600_000, maxBytes: 1024 ** 3 },
      createFailoverMetrics(new Registry()),
      createLogger('silent'),
    );
    const entry = (i: number): JournalEntry => ({
      kind: 'notification',
      at: new Date(Date.UTC(2026, 11, 2, 10, 0, 0, i)).toISOString(),
      id: String(i + 1),
      sourceAddress: null,
      processingTimeMs: null,
      algorithm: 'md5',
      signature: '00112233445566778899aabbccddeeff',
      body: Buffer.from(`{"n":${i}}`).toString('base64'),
    });
    try {
      journal.start();
      await waitUntil('the journal connected', async () => {
        journal.append([entry(0)]);
        await new Promise((resolve) => setTimeout(resolve, 50));
        return journal.backlog === 0;
      });
      for (let i = 1; i <= 200; i += 1) {
        journal.append([entry(i)]);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await waitUntil('the backlog published', () => journal.backlog === 0, 30_000);
      const messages = await messagesOf(queue);
      const ids = messages.flat().map((e) => Number(e.id));
      // The connecting loop may have journaled entry 0 more than once; from 1 on, each exactly once.
      expect(ids.filter((id) => id > 1)).toEqual(Array.from({ length: 200 }, (_, i) => i + 2));
      expect(messages.filter((m) => m.some((e) => Number(e.id) > 1)).length).toBeLessThan(50);
    } finally {
      await journal.stop(1000);
      await proxy.stop();
      await deleteQueue(queue);
    }
  });
});

describe('When JOURNAL_AMQP_URL names a vhost of its own', () => {
  const vhost = `test-journal-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    await run('rabbitmqctl', ['-q', 'add_vhost', vhost]);
    await run('rabbitmqctl', ['-q', 'set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
  });
  afterAll(async () => {
    await run('rabbitmqctl', ['-q', 'delete_vhost', vhost]);
  });

  it('then the journal is there, out of reach of the events vhost and its users', async () => {
    const url = `amqp://guest:guest@127.0.0.1:5672/${vhost}`;
    const svc = await startTestService({ env: { JOURNAL_AMQP_URL: url } });
    try {
      await svc.post(orderBody({ orderId: uniqueId('JVHOST'), status: 'PENDING' })).expect(200);
      await waitUntil(
        'the journal confirmed every entry',
        async () => (await backlogOf(svc.service.metrics.failover.journalBacklog)) === 0,
      );
      expect(await drain(svc.journalQueue, url)).toHaveLength(1);
      const connection = await amqp.connect(AMQP_URL);
      try {
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        await expect(channel.checkQueue(svc.journalQueue)).rejects.toMatchObject({ code: 404 });
      } finally {
        await connection.close().catch(() => undefined);
      }
    } finally {
      await svc.stop();
    }
  });
});

describe('When the journal queue is deleted under a running service (to change its retention)', () => {
  it('then the next entries are not confirmed into nothing: the queue is declared again and they go to it', async () => {
    const svc = await startTestService();
    try {
      await svc.post(orderBody({ orderId: uniqueId('JGONE'), status: 'PENDING' })).expect(200);
      await waitUntil(
        'the first entry confirmed',
        async () => (await backlogOf(svc.service.metrics.failover.journalBacklog)) === 0,
      );
      await deleteQueue(svc.journalQueue);
      const orderId = uniqueId('JBACK');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      const entries = await waitUntil(
        'the entry in the queue declared again',
        async () => {
          const found = await drain(svc.journalQueue).catch(() => []);
          return found.length > 0 && found;
        },
        30_000,
        250,
      );
      expect(entries.map((e) => Buffer.from(e.body, 'base64').toString('utf8'))).toEqual([
        orderBody({ orderId, status: 'PENDING' }),
      ]);
      expect(svc.logs.some((l) => l.includes('the journal queue is gone'))).toBe(true);
    } finally {
      await svc.stop();
    }
  });
});
