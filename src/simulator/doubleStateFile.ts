import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import type { DoubleTruth } from './paymentServiceDouble';

/**
 * The payment-service double's truth in a file (`simulate --api-state FILE`, `simulate api --state FILE`), so that
 * reconciliation can be tried across the double's restarts: read whole at start, written whole (to a temporary
 * file, then renamed over it, so a crash leaves the old or the new, never half) a moment after each change and at
 * the stop.
 */

/** Largest state file read: about a million orders' versions. */
export const STATE_FILE_MAX_BYTES = 512 * 1024 * 1024;

/** How long after a change the file is written: changes in a burst make one write. */
const SAVE_DELAY_MS = 250;

/** A state file that cannot be used, and why, in words that name the file. */
export class DoubleStateError extends Error {}

const json = z.record(z.string(), z.unknown());
const atMs = z.number().int().nonnegative();
const truthSchema = z.strictObject({
  version: z.literal(1),
  orders: z.array(
    z.tuple([z.string().min(1), z.array(z.strictObject({ atMs, order: json, paymentId: z.string().nullable() }))]),
  ),
  refunds: z.array(
    z.tuple([
      z.string().min(1),
      z.array(z.tuple([z.string().min(1), z.array(z.strictObject({ atMs, record: json }))])),
    ]),
  ),
});

/** The truth a state file holds; null when there is no file yet (the double starts knowing nothing). */
export async function readDoubleTruth(file: string): Promise<DoubleTruth | null> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DoubleStateError(`${file}: cannot be read (${(error as Error).message})`);
  }
  if (size > STATE_FILE_MAX_BYTES)
    throw new DoubleStateError(`${file}: ${size} bytes, more than a state file holds (${STATE_FILE_MAX_BYTES})`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new DoubleStateError(`${file}: not a state file of the double (${(error as Error).message})`);
  }
  const result = truthSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue?.path.join('.') ?? '';
    throw new DoubleStateError(
      `${file}: not a state file of the double (at ${where === '' ? 'its top' : where}: ${issue?.message ?? 'invalid'})`,
    );
  }
  return { orders: result.data.orders, refunds: result.data.refunds };
}

/** Keeps a file equal to the double's truth: `changed()` after each change, `flush()` before the process ends. */
export class DoubleStateFile {
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly truth: () => DoubleTruth,
  ) {}

  changed(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writing = this.writing.then(() => this.write());
    }, SAVE_DELAY_MS);
    this.timer.unref();
  }

  /** Writes what is pending now, and waits for every write. */
  async flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      this.writing = this.writing.then(() => this.write());
    }
    await this.writing;
  }

  private async write(): Promise<void> {
    const temporary = `${this.file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify({ version: 1, ...this.truth() }));
    await rename(temporary, this.file);
  }
}
