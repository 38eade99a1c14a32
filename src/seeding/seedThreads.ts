import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ChunkCounts, SeedChunk, SeedWorkerData, WorkerMessage } from './seedWorker';

/** The chunks of `history seed` built and copied in by threads (seedWorker.ts), one chunk at a time each. */

/** A thread could not seed its chunk: the run stops with its reason. */
export class SeedingFailed extends Error {}

/** How often progress is reported (on stderr, by the command). */
const PROGRESS_EVERY_MS = 2_000;

const zeroCounts = (): ChunkCounts => ({
  notifications: 0,
  deliveries: 0,
  orders: 0,
  refunds: 0,
  owners: 0,
  streams: 0,
  events: 0,
  checks: 0,
});

function addCounts(totals: ChunkCounts, counts: ChunkCounts): void {
  totals.notifications += counts.notifications;
  totals.deliveries += counts.deliveries;
  totals.orders += counts.orders;
  totals.refunds += counts.refunds;
  totals.owners += counts.owners;
  totals.streams += counts.streams;
  totals.events += counts.events;
  totals.checks += counts.checks;
}

/** Runs the chunks on `threads` workers, each taking the next as it answers the last; answers the totals and sampled ids. */
export async function runChunks(
  report: (line: string) => void,
  data: SeedWorkerData,
  chunks: readonly SeedChunk[],
  threads: number,
  orders: number,
): Promise<{ totals: ChunkCounts; ids: Map<number, string[]> }> {
  const totals = zeroCounts();
  const ids = new Map<number, string[]>();
  const queue = [...chunks];
  const started = performance.now();
  let reported = started;
  const progress = (): void => {
    const now = performance.now();
    if (now - reported < PROGRESS_EVERY_MS) return;
    reported = now;
    report(
      `seeded ${totals.orders.toLocaleString('en')} of ${orders.toLocaleString('en')} orders ` +
        `(${Math.round((100 * totals.orders) / orders)} %), ` +
        `${Math.round(totals.orders / ((now - started) / 1000)).toLocaleString('en')} orders/s\n`,
    );
  };
  const workers = Array.from(
    { length: Math.min(threads, chunks.length) },
    // Young space of 64 MiB: a chunk's rows are short-lived garbage by the megabyte.
    () =>
      new Worker(path.join(__dirname, 'seedWorker.js'), {
        workerData: data,
        resourceLimits: { maxYoungGenerationSizeMb: 64 },
      }),
  );
  try {
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            const next = (): void => {
              const chunk = queue.shift();
              if (chunk) worker.postMessage(chunk);
              else resolve();
            };
            worker.on('error', reject);
            worker.on('exit', (code) => reject(new Error(`a seeding thread stopped (exit code ${code})`)));
            worker.on('message', (message: WorkerMessage) => {
              if (message.kind === 'failed') {
                reject(new SeedingFailed(`seeding failed: ${message.message}`));
                return;
              }
              addCounts(totals, message.counts);
              if (message.sample.length > 0) ids.set(message.index, message.sample);
              progress();
              next();
            });
            next();
          }),
      ),
    );
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return { totals, ids };
}
