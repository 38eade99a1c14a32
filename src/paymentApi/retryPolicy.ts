import type { BackoffPolicy } from '../domain/backoff';

/**
 * When the client tries again and how fast it may go: pure functions of time and a random source,
 * unit-tested apart from the HTTP client.
 */

export interface RetryOptions {
  /** Attempts per request, the first included. */
  maxAttempts: number;
  /**
   * The wait before each retry, by the one back-off policy (src/domain/backoff.ts), with full jitter: retries of
   * many orders spread out instead of hitting a recovering API together.
   */
  backoff: BackoffPolicy;
  /** A Retry-After longer than this is not waited for: the call fails `unavailable` with retryAfterMs. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 4,
  backoff: { firstMs: 250, maxMs: 10_000, jitter: 'full' },
  maxRetryAfterMs: 60_000,
};

/**
 * The longest wait a Retry-After can ask of us. Longer ones are cut to it: a huge value must neither pause
 * reconciliation for weeks nor overflow a timer (Node turns a delay past 2^31-1 ms into 1 ms, a busy loop).
 */
export const MAX_RETRY_AFTER_MS = 15 * 60_000;

/**
 * Retry-After: seconds or an HTTP date (RFC 9110 10.2.3), at most MAX_RETRY_AFTER_MS; null when absent or
 * unreadable. The only place the client reads it, so every wait it asks for is bounded.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date) || !/[a-z]/i.test(trimmed)) return null;
  return Math.min(Math.max(0, date - nowMs), MAX_RETRY_AFTER_MS);
}

/** Answers worth another attempt: a timeout (408, spec "Errors"), too many requests, and the 5xx. */
export const isRetryableStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/**
 * A cap on request starts per second (the generic cell rate algorithm): up to `perSecond` at once,
 * (at least one), then one every 1/perSecond s. `theoreticalArrivalMs` is the state carried between calls.
 */
export function nextRequestStart(
  theoreticalArrivalMs: number,
  nowMs: number,
  perSecond: number,
): { startAtMs: number; theoreticalArrivalMs: number } {
  const intervalMs = 1000 / perSecond;
  const burstMs = (Math.max(1, Math.floor(perSecond)) - 1) * intervalMs;
  const arrival = Math.max(theoreticalArrivalMs, nowMs);
  return { startAtMs: Math.max(nowMs, arrival - burstMs), theoreticalArrivalMs: arrival + intervalMs };
}
