import type { NotificationOutcome } from './observability/metrics';

/**
 * The one error type for expected failures: an HTTP status, a stable machine-readable code, a
 * message safe to show the caller (never a key, signature or body), and the outcome it counts as.
 */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly outcome: NotificationOutcome | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'RequestError';
  }
}
