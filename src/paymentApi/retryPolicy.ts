/**
 * When the client tries again and how fast it may go: pure functions of time and a random source,
 * unit-tested apart from the HTTP client.
 */

export interface BackoffPolicy {
  /** Ceiling of the first retry's delay; it doubles with each retry. */
  baseDelayMs: number;
  /** No delay ceiling grows past this. */
  maxDelayMs: number;
}

/**
 * Exponential backoff with full jitter (a uniform delay from 0 to the doubled ceiling): retries of
 * many orders spread out instead of hitting a recovering API together. `retry` counts from 1.
 */
export function backoffDelayMs(retry: number, policy: BackoffPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After: seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date) || !/[a-z]/i.test(trimmed)) return null;
  return Math.max(0, date - nowMs);
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
