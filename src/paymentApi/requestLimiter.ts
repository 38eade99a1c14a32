import { nextRequestStart } from './retryPolicy';

/** Takes a place for one request (waiting for it); the function it resolves to gives the place back. */
export type AcquireRequestSlot = () => Promise<() => void>;

export interface RequestLimits {
  maxInFlight: number;
  maxPerSecond: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

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

  return async () => {
    if (inFlight < limits.maxInFlight) inFlight++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
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
