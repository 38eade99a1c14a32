import type { IntakeOutcome } from './domain/outcomes';

/**
 * The one error type for expected failures: an HTTP status, a stable machine-readable code, a
 * message safe to show the caller (never a key, signature or body), and the outcome it counts as.
 */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly outcome: IntakeOutcome | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/**
 * A start that cannot go on: names the dependency and the setting to look at, logged as one line
 * by the entry point (`cannot connect to Postgres at 127.0.0.1:5999 (DATABASE_URL): ECONNREFUSED`).
 */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly setting: string,
  ) {
    super(message);
    this.name = 'StartupError';
  }
}
