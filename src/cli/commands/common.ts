import { InvalidArgumentError, type Command } from 'commander';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { ConfigError, loadConfig, parseDuration, type Config } from '../../config';
import { createLogger } from '../../observability/logger';
import { createDb, createPool, type Db } from '../../database/pool';
import { PooledTransactions } from '../../database/transaction';

/** Exit codes of every command (README, "Operations"). */
export const EXIT_OK = 0;
/** The command ran and found a problem: a failed delivery, a signature that does not verify, differences, a failed publish, nothing found. */
export const EXIT_FAILURE = 1;
/** The command could not run as given: unknown command or option, a bad value, invalid configuration. */
export const EXIT_USAGE = 2;

export type ExitCode = typeof EXIT_OK | typeof EXIT_FAILURE | typeof EXIT_USAGE;

/** An expected failure with a message for the operator (never a key, signature, body or buyer data). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT_FAILURE,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
    this.name = 'UsageError';
  }
}

/** Where a command writes. Progress bars go to stderr, only when it is a terminal and not --json. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

export const processIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** Each command's action returns its exit code; this is where the program collects it. */
export interface CliState {
  exitCode: ExitCode;
}

/**
 * The service's configuration (environment and ./.env, loaded by the entry point), with the
 * command's flags applied on top as the variables they stand for. Invalid configuration is a usage
 * error naming every problem.
 */
export function readConfig(io: CliIo, overrides: Record<string, string | undefined> = {}): Config {
  const env: NodeJS.ProcessEnv = { ...io.env };
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) env[name] = value;
  try {
    return loadConfig(env, { receiving: false });
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

/** Statement and connection timeout of the command-line tools: long enough for big batches. */
const CLI_DATABASE_TIMEOUT_MS = 120_000;

/**
 * Opens a small pool for one command and always closes it: Kysely for the queries, and the recorder's
 * transactions (quarantine retry records through the recorder).
 */
export async function withDatabase<T>(
  config: Config,
  work: (db: Db, transactions: PooledTransactions) => Promise<T>,
): Promise<T> {
  const pool = createPool(
    {
      url: config.databaseUrl,
      poolMax: 2,
      timeoutMs: CLI_DATABASE_TIMEOUT_MS,
      applicationName: 'payment-notification-receiver:cli',
    },
    createLogger('silent'),
  );
  const db = createDb(pool);
  try {
    return await work(db, new PooledTransactions(pool));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === '42P01')
      throw new CliError(
        `the database has no such table (${(error as Error).message}); run the migrations first (npm run migrate)`,
      );
    if (code === '3D000') throw new CliError(`the database does not exist: ${(error as Error).message}`);
    if (code === 'ECONNREFUSED') throw new CliError(`cannot connect to the database: ${(error as Error).message}`);
    throw error;
  } finally {
    await db.destroy();
  }
}

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

// ---- Option parsers: a bad value is reported by commander and exits 2. ----

export function integerOption(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be a whole number from ${min}`);
    const n = Number(value);
    if (n < min || n > max)
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER ? `must be at least ${min}` : `must be from ${min} to ${max}`,
      );
    return n;
  };
}

export function numberOption(min: number, max: number, { exclusiveMin = false } = {}): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n > max || (exclusiveMin ? n <= min : n < min)) {
      throw new InvalidArgumentError(
        `must be a number ${exclusiveMin ? 'above' : 'from'} ${min}${Number.isFinite(max) ? ` to ${max}` : ''}`,
      );
    }
    return n;
  };
}

/** `500ms`, `30s`, `15m`, `12h`, `7d` (a bare number is seconds), as milliseconds. */
export function durationOption(value: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new InvalidArgumentError('must be a duration such as 500ms, 30s, 15m, 12h or 7d');
  return ms;
}

/** An ISO 8601 time, or a duration meaning that long ago (`2h`). */
export function timeOption(value: string): Date {
  const ago = parseDuration(value);
  if (ago !== null) return new Date(Date.now() - ago);
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const time = new Date(value);
    if (!Number.isNaN(time.getTime())) return time;
  }
  throw new InvalidArgumentError('must be an ISO 8601 time (2026-11-22T10:00:00Z) or a duration ago (30m, 2h, 7d)');
}

export function choiceOption<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    const found = choices.find((c) => c.toLowerCase() === value.trim().toLowerCase());
    if (!found) throw new InvalidArgumentError(`must be one of ${choices.join(', ')}`);
    return found;
  };
}

export const collect =
  <T>(parse: (value: string) => T) =>
  (value: string, previous: T[] | undefined): T[] => [...(previous ?? []), parse(value)];

/** Adds --json to a command. */
export function withJson(command: Command): Command {
  return command.option('--json', 'machine-readable output: one JSON document on stdout');
}

export function withDatabaseUrl(command: Command): Command {
  return command.option('--database-url <url>', 'Postgres to use instead of DATABASE_URL');
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

/** Runs an action and records its exit code; errors propagate to the entry point. */
export function action<A extends unknown[]>(
  state: CliState,
  run: (...args: A) => Promise<ExitCode>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    state.exitCode = await run(...args);
  };
}
