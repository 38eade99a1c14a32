import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import type { CliIo } from './io';

/** Writes the result: JSON (one document on stdout) with --json, the human lines otherwise. */
export function emit(io: CliIo, json: boolean, data: unknown, human: () => string[]): void {
  if (json) io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
  else io.stdout.write(`${human().join('\n')}\n`);
}

export interface Progress {
  /** Counts work done. */
  increment(step?: number): void;
  /** Grows the total (work discovered on the way). */
  setTotal(total: number): void;
  /** A line for the human report, printed above the bar while it runs. */
  log(line: string): void;
  stop(): void;
}

/** A progress bar on stderr, only when stderr is a terminal and the output is not --json. */
export function startProgress(io: CliIo, json: boolean, label: string, total: number): Progress {
  if (json || !io.stderr.isTTY) {
    return {
      increment: () => undefined,
      setTotal: () => undefined,
      log: (line) => {
        if (!json) io.stdout.write(`${line}\n`);
      },
      stop: () => undefined,
    };
  }
  const multi = new MultiBar(
    {
      stream: io.stderr,
      format: `${label} [{bar}] {value}/{total} {percentage}% | {duration_formatted}`,
      hideCursor: true,
      clearOnComplete: true,
    },
    Presets.shades_classic,
  );
  const bar: SingleBar = multi.create(total, 0);
  return {
    increment: (step = 1) => bar.increment(step),
    setTotal: (value) => bar.setTotal(value),
    log: (line) => {
      // Above the bar when both go to the same terminal; plain stdout when stdout is redirected.
      if (io.stdout.isTTY) multi.log(`${line}\n`);
      else io.stdout.write(`${line}\n`);
    },
    stop: () => multi.stop(),
  };
}

/** Short form of a hex digest for human output. */
export const shortHex = (hex: string): string => hex.slice(0, 16);

/** Fixed-width columns for human tables. */
export function table(rows: string[][]): string[] {
  if (rows.length === 0) return [];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

export const iso = (value: Date | string | null): string | null =>
  value === null ? null : new Date(value).toISOString();
