import type { PaymentApiErrorDetails } from '../../paymentApi/paymentApiError';
import { html, type Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { duration, plural, time } from '../frame/parts';
import { setting, term } from '../frame/terms';

/** What the order page and a check's result say of checks with the payment service: what failed, what comes next. */

/** When reconciliation checks an order, and how long one question may take. */
export interface CheckSchedule {
  afterMs: number;
  giveUpMs: number;
  timeoutMs: number;
}

/** What the next automatic check depends on. */
export interface CheckState {
  /** The order, or a refund of it, is not final. */
  open: boolean;
  /** The last change of the order or its refunds: checks are timed from it. */
  lastChange: Date | null;
  nextCheckAt: Date | null;
  givenUpAt: Date | null;
}

/** When the next automatic check comes, or why none will, in a sentence. */
export function nextCheck(state: CheckState, ctx: PageContext, schedule: CheckSchedule | null): Html {
  if (schedule === null)
    return html`none: checks are off (${setting('PAYMENT_API_URL')} is not set), so a payment whose notification never
    comes is never learnt.`;
  if (!state.open) return html`none: the order is final, so there is nothing more to learn.`;
  if (state.givenUpAt !== null)
    return html`none: <span class="badge bad">${term('given-up', 'given up')}</span> ${time(state.givenUpAt, ctx)},
      after ${duration(schedule.giveUpMs)} (${setting('RECONCILE_GIVE_UP')}) without news. Look the order up in the
      payment service’s panel, or check it now.`;
  if (state.nextCheckAt !== null) return time(state.nextCheckAt, ctx);
  const lastChange = state.lastChange ?? ctx.now;
  const quietFor = ctx.now.getTime() - lastChange.getTime();
  if (quietFor > schedule.giveUpMs)
    return html`none: the order has had no news for ${duration(quietFor)}, longer than ${duration(schedule.giveUpMs)}
    (${setting('RECONCILE_GIVE_UP')}), so it is no longer checked. It was most likely abandoned: look it up in the
    payment service’s panel, or check it now.`;
  const first = new Date(lastChange.getTime() + schedule.afterMs);
  return first.getTime() > ctx.now.getTime()
    ? html`about ${time(first, ctx)}, ${duration(schedule.afterMs)} after its last news (${setting('RECONCILE_AFTER')}).`
    : html`due now: the next round of checks takes it.`;
}

/** What failed, when a check got no usable answer: unreachable, timed out, credentials refused, order unknown. */
export function whatFailed(
  result: string,
  failure: PaymentApiErrorDetails | null,
  schedule: CheckSchedule | null,
  posId: string,
): string {
  const tries = failure && failure.attempts > 1 ? ` (${plural(failure.attempts, 'try', 'tries')})` : '';
  switch (result) {
    case 'unavailable':
      if (failure?.noAnswer === 'timeout')
        return `the payment service timed out: it did not answer within ${
          schedule ? duration(schedule.timeoutMs) : 'the time allowed'
        } (PAYMENT_API_TIMEOUT)${tries}.`;
      if (failure?.noAnswer === 'network')
        return `the service could not reach the payment service: no connection${tries}.`;
      if (failure?.httpStatus === 429) return `the payment service is too busy and asked to wait (HTTP 429)${tries}.`;
      if (failure?.httpStatus != null) return `the payment service failed (HTTP ${failure.httpStatus})${tries}.`;
      return `the service could not reach the payment service${tries}.`;
    case 'unauthorized':
      return `the payment service refused the credentials of shop account ${posId} (PAYMENT_API_CREDENTIALS).`;
    case 'not_found':
      return 'the payment service does not know this order: it was never created there, or under another shop account.';
    case 'forbidden':
      return 'the payment service refused to tell: the order belongs to another shop account.';
    case 'pos_mismatch':
      return 'the payment service says the order belongs to another shop account; nothing it said was taken.';
    case 'invalid_answer':
      return 'the payment service’s answer could not be read.';
    case 'no_credentials':
      return `no credentials for shop account ${posId} are set up (PAYMENT_API_CREDENTIALS).`;
    case 'invalid_order_id':
      return 'this order id cannot be asked about.';
    case 'cancelled':
      return 'the check was stopped before an answer came (the page was left).';
    default:
      return result.replace(/_/g, ' ');
  }
}

/** The HTTP status of a check's result page: 200 when it was done, else what kind of failure it met. */
export function checkStatus(result: string, failure: PaymentApiErrorDetails | null): number {
  if (result === 'unchanged' || result === 'repaired') return 200;
  if (result === 'unavailable') return failure?.noAnswer === 'timeout' ? 504 : 503;
  if (result === 'cancelled') return 503;
  return 502;
}
