import type { Db } from '../database/pool';
import type { PaymentApiState } from '../database/schema';
import type { Logger } from '../observability/logger';
import type { PaymentApiErrorDetails } from '../paymentApi/paymentApiError';
import type { CheckResult } from '../observability/reconciliationMetrics';
import { CONFIRM_EVERY_MS, recordReachability } from './reachabilityQueries';

/**
 * Whether the payment API answers each POS's checks, kept where every replica's console reads it (the reconciler
 * runs on one replica only, and a person's check on any). Each process remembers what it last wrote per POS and
 * writes only when a check finds otherwise, or to confirm it still holds every few minutes: a handful of rows
 * written a handful of times, never on the intake's path.
 */

/** What reachability needs of a check (checkOrder.ts's OrderCheck): its POS, its result and why it failed. */
export interface CheckSeen {
  posId: string;
  result: CheckResult;
  failure: PaymentApiErrorDetails | null;
}

/** What a check's result says of the API for its POS; null when it says nothing of it (no question was asked). */
export function reachabilityOf(
  check: Pick<CheckSeen, 'result' | 'failure'>,
): { state: PaymentApiState; detail: string } | null {
  switch (check.result) {
    case 'unavailable':
      return { state: 'unreachable', detail: failureCode(check.failure) };
    case 'unauthorized':
      return { state: 'refused', detail: 'credentials' };
    case 'unchanged':
    case 'repaired':
    case 'pos_mismatch':
    case 'not_found':
    case 'forbidden':
    case 'invalid_answer':
      return { state: 'answering', detail: '' };
    case 'no_credentials':
    case 'invalid_order_id':
    case 'cancelled':
      return null;
  }
}

/** timeout, network, http_503, http_429: why the API gave no answer worth having. */
export function failureCode(failure: PaymentApiErrorDetails | null): string {
  if (failure === null) return 'unknown';
  if (failure.noAnswer !== null) return failure.noAnswer;
  return failure.httpStatus === null ? 'unknown' : `http_${failure.httpStatus}`;
}

export class PaymentApiReachability {
  private readonly written = new Map<string, { state: PaymentApiState; detail: string; at: number }>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Records what a check found of its POS's API, if it differs from what this process last wrote. Never throws. */
  async observe(check: CheckSeen): Promise<void> {
    const found = reachabilityOf(check);
    if (found === null) return;
    const at = this.now();
    const last = this.written.get(check.posId);
    if (
      last !== undefined &&
      last.state === found.state &&
      last.detail === found.detail &&
      at.getTime() - last.at < CONFIRM_EVERY_MS
    )
      return;
    try {
      await recordReachability(this.db, { posId: check.posId, ...found, at });
      this.written.set(check.posId, { ...found, at: at.getTime() });
    } catch (error) {
      // The record is for people; a check is not failed for it.
      this.logger.warn({ err: error, posId: check.posId }, 'could not record whether the payment API answers');
    }
  }
}
