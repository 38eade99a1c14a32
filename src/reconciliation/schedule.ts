import { backoffMs, type BackoffPolicy } from '../domain/backoff';

/**
 * When an order is checked against the payment API: pure, so the whole schedule is tested without a
 * database. An order not final (or with a refund not final) is checked `afterMs` after its last observation,
 * then after twice that, four times, ... (at most `maxDelayMs` apart), until it is final or `giveUpMs` has
 * passed since its last observation: a last check then, and it is given up (counted and alerted). A newer
 * observation starts the schedule over.
 */

export interface SchedulePolicy {
  /** RECONCILE_AFTER */
  afterMs: number;
  /** RECONCILE_GIVE_UP */
  giveUpMs: number;
  /** The widest gap between two checks. */
  maxDelayMs: number;
}

/** The policy from the configuration: checks at most 6 hours (and a quarter of the give-up time) apart. */
export function schedulePolicy(afterMs: number, giveUpMs: number): SchedulePolicy {
  return { afterMs, giveUpMs, maxDelayMs: Math.max(afterMs, Math.min(6 * 3_600_000, giveUpMs / 4)) };
}

/**
 * The gap after the given number of checks since the last observation (1: after the first): the one back-off
 * policy, from twice RECONCILE_AFTER (the first check came RECONCILE_AFTER after the observation) to maxDelayMs.
 */
export function delayAfterChecks(checks: number, policy: SchedulePolicy): number {
  return backoffMs({ firstMs: 2 * policy.afterMs, maxMs: policy.maxDelayMs, jitter: 'none' }, checks);
}

export type NextStep = { givenUp: false; nextCheckAt: Date } | { givenUp: true };

/**
 * After a check that left the order open: the next check, never later than the give-up time (the last
 * check happens then), or given up once a check at or past the give-up time found it still open. An API
 * that asked to wait (Retry-After) pushes the next check at least that far.
 */
export function afterCheck(
  observedAt: Date,
  checks: number,
  checkedAt: Date,
  policy: SchedulePolicy,
  retryAfterMs: number | null = null,
): NextStep {
  const giveUpAt = observedAt.getTime() + policy.giveUpMs;
  if (checkedAt.getTime() >= giveUpAt) return { givenUp: true };
  const next = checkedAt.getTime() + Math.max(delayAfterChecks(checks, policy), retryAfterMs ?? 0);
  return { givenUp: false, nextCheckAt: new Date(Math.min(next, giveUpAt)) };
}

/** The first check of an observation. */
export const firstCheckAt = (observedAt: Date, policy: SchedulePolicy): Date =>
  new Date(observedAt.getTime() + policy.afterMs);

/**
 * How long the sweep pauses after rounds in which the API was unavailable: twice the interval after the first,
 * doubling per round to 5 minutes (the reconciler also waits at least what the API asked, Retry-After).
 */
export const unavailableBackoff = (intervalMs: number): BackoffPolicy => ({
  firstMs: 2 * intervalMs,
  maxMs: 300_000,
  jitter: 'none',
});
