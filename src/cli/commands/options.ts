import { InvalidArgumentError, type Command } from 'commander';
import { parseDuration } from '../../config';
import { idProblem } from '../../parsing/identifiers';

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

/** An order or refund id that may enter a query or a payment-API path (not `.`, `..`, `/`, control characters, ...). */
export function idOption(value: string): string {
  const problem = idProblem(value);
  if (problem !== null) throw new InvalidArgumentError(problem);
  return value;
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
