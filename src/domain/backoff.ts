/**
 * The one back-off policy (pure): the wait before each retry doubles from `firstMs` up to `maxMs`, with full
 * jitter where many callers retry against one recovering service. The relay (its broker), the reconciler (the
 * payment API, and its schedule of checks), the payment-API client (each request) and the single-active worker
 * (a failed step) all wait by it, each with its own numbers; the relay's per-event retries apply it in SQL, built
 * from the same policy (src/database/backoffSql.ts).
 */

export interface BackoffPolicy {
  /** The wait before the first retry. */
  firstMs: number;
  /** No wait grows past this. */
  maxMs: number;
  /**
   * `full`: a uniform draw from 0 to the wait (many callers spread out instead of hitting a recovering service
   * together); `none`: the wait itself.
   */
  jitter: 'full' | 'none';
}

/** Doublings past which the wait is at its ceiling for any policy (and 2 ** n stays finite). */
export const MAX_DOUBLINGS = 40;

/** The wait before retry `retry` (1 for the first): firstMs × 2^(retry-1), at most maxMs, jittered as the policy says. */
export function backoffMs(policy: BackoffPolicy, retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(MAX_DOUBLINGS, Math.max(0, retry - 1)));
  return policy.jitter === 'full' ? Math.floor(random() * ceiling) : ceiling;
}

/** Failures in a row and the wait after each: what a loop keeps between its attempts. */
export class Retries {
  private failures = 0;

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Counts a failure; answers the wait before the next attempt, at least `atLeastMs` (a Retry-After, say). */
  next(atLeastMs = 0): number {
    this.failures += 1;
    return Math.max(backoffMs(this.policy, this.failures, this.random), atLeastMs);
  }

  /** An attempt succeeded: the next failure waits firstMs again. */
  reset(): void {
    this.failures = 0;
  }

  /** Failures in a row so far. */
  get count(): number {
    return this.failures;
  }
}
