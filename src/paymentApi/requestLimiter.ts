import { nextRequestStart } from './retryPolicy';

/**
 * Takes a place for one request (waiting for it); the function it resolves to gives the place back. A waiter
 * whose signal aborts leaves the queue and rejects with the signal's reason.
 */
export type AcquireRequestSlot = (signal?: AbortSignal) => Promise<() => void>;

export interface RequestLimits {
  maxInFlight: number;
  maxPerSecond: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

/** Why a signal aborted, as an Error (its reason is usually a DOMException, which is one). */
export const abortReason = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error('aborted');

/**
 * At most `maxInFlight` requests at once and `maxPerSecond` starts per second, first come first
 * served: the payment API's rate limits are not published (spec, "Limits"), so we stay well inside.
 */
export function createRequestLimiter(limits: RequestLimits): AcquireRequestSlot {
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  let theoreticalArrivalMs = 0;

  const release = (): void => {
    const next = waiting.shift();
    // The place passes straight to the next waiter, so a newcomer cannot overtake it.
    if (next) next();
    else inFlight--;
  };

  const wait = (signal: AbortSignal | undefined): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const leave = (): void => {
        const index = waiting.indexOf(take);
        if (index !== -1) waiting.splice(index, 1);
        if (signal) reject(abortReason(signal));
      };
      function take(): void {
        signal?.removeEventListener('abort', leave);
        resolve();
      }
      waiting.push(take);
      signal?.addEventListener('abort', leave, { once: true });
    });

  return async (signal) => {
    signal?.throwIfAborted();
    if (inFlight < limits.maxInFlight) inFlight++;
    else await wait(signal);
    const now = limits.now();
    const next = nextRequestStart(theoreticalArrivalMs, now, limits.maxPerSecond);
    theoreticalArrivalMs = next.theoreticalArrivalMs;
    if (next.startAtMs > now) await limits.sleep(next.startAtMs - now);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  };
}
