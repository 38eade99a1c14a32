import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { seededRandom } from '../simulator/random';
import { copyRows } from './copyRows';
import { inSeedTransaction, prepareSeedConnection } from './seedQueries';
import { emptyRows, SEED_TABLES, seedOrder, type SeedRows, type SeedSettings } from './seededOrders';

/**
 * A seeding thread (index.ts starts one per core): takes chunks of orders, builds their rows and copies them in,
 * a chunk per transaction, on a connection of its own, and answers what it wrote.
 *
 * Each writes through the partitioned tables, which route every row to its day (decision 0012).
 */

/** A slice of the history: `orders` orders created between fromMs and toMs. */
export interface SeedChunk {
  index: number;
  fromMs: number;
  toMs: number;
  orders: number;
  /** The first of the notification ids reserved for it: MAX_IDS_PER_ORDER for each order. */
  firstId: string;
  seed: number;
  /** How many of its order ids to answer (--sample). */
  sample: number;
}

export interface SeedWorkerData {
  url: string;
  settings: SeedSettings;
}

export type ChunkCounts = Record<keyof SeedRows, number>;

export type WorkerMessage =
  { kind: 'done'; index: number; counts: ChunkCounts; sample: string[] } | { kind: 'failed'; message: string };

/** The most ids one order takes: PENDING, WAITING_FOR_CONFIRMATION, its final status, a refund's, the refund id. */
export const MAX_IDS_PER_ORDER = 5;

/** The rows of one chunk, with the notification ids reserved for it. */
export function chunkRows(settings: SeedSettings, chunk: SeedChunk): { rows: SeedRows; sample: string[] } {
  const random = seededRandom(chunk.seed);
  const rows = emptyRows();
  const sample: string[] = [];
  let next = BigInt(chunk.firstId);
  const nextId = (): string => String(next++);
  const span = chunk.toMs - chunk.fromMs;
  for (let i = 0; i < chunk.orders; i++) {
    const orderId = seedOrder(settings, random, chunk.fromMs + Math.floor(random() * span), nextId, rows);
    if (orderId !== null && sample.length < chunk.sample) sample.push(orderId);
  }
  return { rows, sample };
}

const countsOf = (rows: SeedRows): ChunkCounts => ({
  notifications: rows.notifications.length,
  deliveries: rows.deliveries.length,
  orders: rows.orders.length,
  refunds: rows.refunds.length,
  owners: rows.owners.length,
  streams: rows.streams.length,
  events: rows.events.length,
  checks: rows.checks.length,
});

async function writeChunk(client: pg.Client, settings: SeedSettings, chunk: SeedChunk): Promise<WorkerMessage> {
  return inSeedTransaction(client, async () => {
    const { rows, sample } = chunkRows(settings, chunk);
    await copyRows(client, SEED_TABLES.notifications, rows.notifications);
    await copyRows(client, SEED_TABLES.deliveries, rows.deliveries);
    await copyRows(client, SEED_TABLES.orders, rows.orders);
    await copyRows(client, SEED_TABLES.refunds, rows.refunds);
    await copyRows(client, SEED_TABLES.owners, rows.owners);
    await copyRows(client, SEED_TABLES.streams, rows.streams);
    await copyRows(client, SEED_TABLES.events, rows.events);
    await copyRows(client, SEED_TABLES.checks, rows.checks);
    return { kind: 'done', index: chunk.index, counts: countsOf(rows), sample };
  });
}

async function serve(port: NonNullable<typeof parentPort>, { url, settings }: SeedWorkerData): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'payment-notification-receiver:seed' });
  await client.connect();
  await prepareSeedConnection(client);
  let queue = Promise.resolve();
  port.on('message', (chunk: SeedChunk) => {
    queue = queue.then(async () => {
      try {
        port.postMessage(await writeChunk(client, settings, chunk));
      } catch (error) {
        port.postMessage({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
      }
    });
  });
}

if (parentPort) {
  const port = parentPort;
  serve(port, workerData as SeedWorkerData).catch((error: unknown) =>
    port.postMessage({ kind: 'failed', message: error instanceof Error ? error.message : String(error) }),
  );
}
