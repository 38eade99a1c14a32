/**
 * The time the service reads where a test may drive it, and the waits that go with it: the admin port's minutes
 * (the sign-in throttle, the sessions), and the single-active jobs' reads of the time and their waits between steps
 * (SingleActiveWorker: a back-off, the partition maintainer's 10 s check). The service runs on `systemClock`; a test
 * that moves a clock on (test/support/drivenClock.ts) takes a back-off of seconds as a step instead of sitting
 * through it. Nothing else reads a clock through here: the database's `now()` and the HTTP timeouts stay real.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once `ms` have passed on this clock; the function it returns cancels the call. */
  after(ms: number, callback: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    return () => clearTimeout(timer);
  },
};
