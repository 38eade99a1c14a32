/**
 * The memory mode (`npm run bench -- --memory [<orders>]`): the heap the recorder's kept state takes, per entry, at
 * its default and at its maximum, and how long a busy shop's day takes to fill the default. The notifications are
 * the benchmark's lifecycles (random ids, buyer and pay method, every fifth order through
 * WAITING_FOR_CONFIRMATION, every fourth refunded), read by the service's parser.
 * - RECORDER_KEPT_ORDERS: a Recorder on a database of its own, built as the service builds it, records `orders`
 *   orders; the live heap after a full collection, less the same once it has forgotten its kept state (what a
 *   failover does), is what the state holds.
 * - RECORDER_KNOWN_NOTIFICATIONS: the cache filled to its default with a record of each notification, as the
 *   recorder remembers one after its commit; the live heap after a full collection, less before.
 */
import { createHash, randomUUID } from 'node:crypto';
import vm from 'node:vm';
import v8 from 'node:v8';
import { loadConfig } from '../../src/config';
import { recordingContext } from '../../src/config/runtime';
import { createPool } from '../../src/database/pool';
import { PooledTransactions } from '../../src/database/transaction';
import { createLogger } from '../../src/observability/logger';
import type { Notification } from '../../src/parsing/notification';
import { parseNotification } from '../../src/parsing/parseNotification';
import { meaningOf } from '../../src/recording/batch';
import { KnownNotifications } from '../../src/recording/knownNotifications';
import { Recorder } from '../../src/recording/recorder';
import { deliveryOf } from '../support/notifications';
import { migrate } from './historyDatabases';
import { BENCH_WORKLOAD, workload } from './load';
import { KEY, PG, POS_ID } from './options';
import { admin } from './receivers';

/** A busy shop's day (docs/PERFORMANCE.md): 245,000 notifications. */
const BUSY_DAY_NOTIFICATIONS = 245_000;
/** Notifications handed to the recorder at once: it batches them as it does the intake's requests. */
const IN_FLIGHT = 256;
/** The settings' maxima (src/config/settingsSchema.ts). */
const KEPT_ORDERS_MAX = 100_000;
const KNOWN_MAX = 200_000;

/** A full collection, from a flag set at run time (the benchmark runs without --expose-gc). */
function collector(): () => number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  return () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
}

/** The benchmark's notifications, parsed, until `orders` orders have begun (and the last one's lifecycle ends). */
function lifecycles(orders: number, seed: string): Array<{ body: string; notification: Notification }> {
  const stream = workload(seed, { ...BENCH_WORKLOAD, repeatShare: 0, randomIds: true });
  const made: Array<{ body: string; notification: Notification }> = [];
  for (let begun = 0; begun < orders;) {
    const { body } = stream();
    const parsed = parseNotification(Buffer.from(body));
    if (!parsed.ok) throw new Error(`the workload made an unreadable body: ${parsed.detail}`);
    if (parsed.notification.kind === 'order' && parsed.notification.status === 'PENDING') begun += 1;
    made.push({ body, notification: parsed.notification });
  }
  return made;
}

/** The heap the kept orders take once the Recorder has recorded every notification, and how many it keeps. */
async function keptOrdersHeld(
  made: ReadonlyArray<{ body: string; notification: Notification }>,
  heap: () => number,
): Promise<{ bytes: number; kept: number; perSecond: number }> {
  const database = `bench_memory_${process.pid}`;
  const url = `${PG}/${database}`;
  const config = loadConfig({ DATABASE_URL: url, SECOND_KEYS: `${POS_ID}:${KEY}` });
  const logger = createLogger('silent');
  const pool = createPool({ url, poolMax: 2, timeoutMs: 10_000, keyLookupsOnly: true }, logger);
  try {
    // Inside: a migration that fails midway still has its database dropped.
    await migrate(url);
    const recorder = new Recorder(
      new PooledTransactions(pool),
      recordingContext(config),
      {
        maxBatchSize: 64,
        lanes: 1,
        maxQueued: 2000,
        maxWaitMs: 10_000,
        answerWithinMs: 11_000,
        knownCapacity: 0,
        keptOrders: config.recorderKeptOrders,
      },
      logger,
    );
    const started = performance.now();
    const inFlight = new Set<Promise<unknown>>();
    for (const { body, notification } of made) {
      if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
      const recording = recorder.record(deliveryOf(body), notification).finally(() => inFlight.delete(recording));
      inFlight.add(recording);
    }
    await Promise.all(inFlight);
    const perSecond = made.length / ((performance.now() - started) / 1000);
    const withState = heap();
    recorder.forgetKeptState();
    const orders = new Set(made.map(({ notification }) => notification.orderId)).size;
    return { bytes: withState - heap(), kept: Math.min(orders, config.recorderKeptOrders), perSecond };
  } finally {
    await pool.end();
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  }
}

/** The heap the known-notifications cache takes, filled to `capacity` with a record of each notification. */
function knownHeld(
  made: ReadonlyArray<{ body: string; notification: Notification }>,
  capacity: number,
  heap: () => number,
): { bytes: number; kept: number } {
  const records = made.slice(0, capacity);
  const before = heap();
  const known = new KnownNotifications(capacity);
  known.remember(
    records.map(({ body, notification }) => ({
      meaning: meaningOf(notification),
      id: randomUUID(),
      receivedAt: new Date().toISOString(),
      bodySha256: createHash('sha256').update(body).digest(),
      ownerPosId: POS_ID,
      deliveryRows: 1,
    })),
  );
  const bytes = heap() - before;
  // Alive until measured.
  if (known.repeatOf('', Buffer.alloc(0), []) !== undefined) throw new Error('an empty meaning was known');
  return { bytes, kept: records.length };
}

const mb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MB`;

export async function runMemory(orders: number): Promise<void> {
  const heap = collector();
  const defaults = loadConfig({ SECOND_KEYS: `${POS_ID}:${KEY}` });
  const made = lifecycles(orders, `memory${process.pid}`);
  process.stderr.write(`memory: ${orders} orders, ${made.length} notifications\n`);
  const kept = await keptOrdersHeld(made, heap);
  const known = knownHeld(made, defaults.recorderKnownNotifications, heap);
  const notificationsPerOrder = made.length / orders;
  const line = (
    setting: string,
    held: { bytes: number; kept: number },
    byDefault: number,
    maximum: number,
    fill: number,
  ) => {
    const each = held.bytes / held.kept;
    const hours = (24 * fill) / BUSY_DAY_NOTIFICATIONS;
    return (
      `  ${setting}: ${held.kept} kept, ${each.toFixed(0)} B each, ${mb(each * byDefault)} at its default ` +
      `(${byDefault}), ${mb(each * maximum)} at its maximum (${maximum}); a busy shop's day fills the default in ` +
      `${hours.toFixed(1)} h`
    );
  };
  process.stdout.write(
    [
      `The recorder's kept state (live heap after a full collection), ${orders} orders, ${made.length} notifications ` +
        `(recorded at ${kept.perSecond.toFixed(0)}/s):`,
      line(
        'RECORDER_KEPT_ORDERS',
        kept,
        defaults.recorderKeptOrders,
        KEPT_ORDERS_MAX,
        defaults.recorderKeptOrders * notificationsPerOrder,
      ),
      line(
        'RECORDER_KNOWN_NOTIFICATIONS',
        known,
        defaults.recorderKnownNotifications,
        KNOWN_MAX,
        defaults.recorderKnownNotifications,
      ),
      JSON.stringify({ memory: { orders, notifications: made.length, keptOrders: kept, known } }),
      '',
    ].join('\n'),
  );
}
