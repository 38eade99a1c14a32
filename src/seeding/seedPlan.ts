import { DAY_MS } from '../partitions/partitionDays';
import { MAX_IDS_PER_ORDER, type SeedChunk } from './seedWorker';

/**
 * How `history seed` divides its orders (pure): into chunks of at most a day each, the ids of each chunk's
 * notifications reserved in one block, and which orders' ids it prints as a sample.
 */

/** Orders per chunk (one transaction); a chunk is at most a day, so it fills few partitions. */
const CHUNK_ORDERS = 5_000;
/** The oldest and the newest month, where --sample takes its ids. */
const SAMPLE_WINDOW_MS = 30 * DAY_MS;
const inOldestMonth = (slice: { fromMs: number }, fromMs: number): boolean => slice.fromMs < fromMs + SAMPLE_WINDOW_MS;
const inNewestMonth = (slice: { toMs: number }, toMs: number): boolean => slice.toMs > toMs - SAMPLE_WINDOW_MS;

/**
 * The chunks of a run, oldest first: the orders spread evenly over the time from fromMs to toMs, day by day, each
 * chunk with its block of the notification ids reserved from `firstId` on.
 */
export function planChunks(
  orders: number,
  fromMs: number,
  toMs: number,
  options: { sample: number; random: () => number; firstId?: bigint },
): SeedChunk[] {
  const chunks: SeedChunk[] = [];
  let planned = 0;
  let nextId = options.firstId ?? 1n;
  for (let dayStart = Math.floor(fromMs / DAY_MS) * DAY_MS; dayStart < toMs; dayStart += DAY_MS) {
    const start = Math.max(fromMs, dayStart);
    const end = Math.min(toMs, dayStart + DAY_MS);
    // The orders up to the end of this day, rounded: the days add up to `orders` exactly.
    const dayOrders = Math.round((orders * (end - fromMs)) / (toMs - fromMs)) - planned;
    planned += dayOrders;
    const inWindow = inOldestMonth({ fromMs: start }, fromMs) || inNewestMonth({ toMs: end }, toMs);
    for (let done = 0; done < dayOrders; done += CHUNK_ORDERS) {
      const count = Math.min(CHUNK_ORDERS, dayOrders - done);
      chunks.push({
        index: chunks.length,
        fromMs: start + Math.floor(((end - start) * done) / dayOrders),
        toMs: start + Math.floor(((end - start) * (done + count)) / dayOrders),
        orders: count,
        firstId: String(nextId),
        seed: Math.floor(options.random() * 2 ** 31),
        sample: inWindow ? options.sample : 0,
      });
      nextId += BigInt(count * MAX_IDS_PER_ORDER);
    }
  }
  return chunks;
}

/** Half the ids from the oldest month's chunks, half from the newest's, each half spread over its chunks. */
export function pickSample(chunks: readonly SeedChunk[], ids: ReadonlyMap<number, string[]>, sample: number): string[] {
  if (chunks.length === 0 || sample === 0) return [];
  const fromMs = chunks[0]?.fromMs ?? 0;
  const toMs = chunks.at(-1)?.toMs ?? 0;
  const spread = (window: readonly SeedChunk[], wanted: number): string[] => {
    const lists = window.map((c) => ids.get(c.index) ?? []);
    const picked: string[] = [];
    for (let round = 0; picked.length < wanted && lists.some((l) => l.length > round); round++)
      for (const list of lists) {
        const id = list[round];
        if (id !== undefined && picked.length < wanted) picked.push(id);
      }
    return picked;
  };
  const oldest = spread(
    chunks.filter((c) => inOldestMonth(c, fromMs)),
    Math.floor(sample / 2),
  );
  // A history shorter than two months has one month in both: an id is printed once.
  const taken = new Set(oldest);
  const newest = spread(chunks.filter((c) => inNewestMonth(c, toMs)).reverse(), sample)
    .filter((id) => !taken.has(id))
    .slice(0, sample - oldest.length);
  return [...oldest, ...newest];
}
