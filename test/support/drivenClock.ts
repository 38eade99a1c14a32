import type { Clock } from '../../src/domain/clock';

interface Wait {
  dueAt: number;
  fire(): void;
}

/**
 * A clock a test moves on (ServiceOptions.clock): the real time plus what the test has advanced it by. Its waits run
 * out on their own as the real time passes, and at once when advance() moves the clock past them, so that a test
 * takes a back-off or a job's round as a step instead of sitting through it.
 */
export class DrivenClock implements Clock {
  private aheadMs = 0;
  private readonly waits = new Set<Wait>();

  now(): number {
    return Date.now() + this.aheadMs;
  }

  after(ms: number, callback: () => void): () => void {
    const cancel = (): void => {
      clearTimeout(timer);
      this.waits.delete(wait);
    };
    const wait: Wait = {
      dueAt: this.now() + ms,
      fire: () => {
        cancel();
        callback();
      },
    };
    const timer = setTimeout(() => wait.fire(), ms);
    this.waits.add(wait);
    return cancel;
  }

  /** Moves the clock on by `ms`, ending every wait that falls due by then. */
  advance(ms: number): void {
    this.aheadMs += ms;
    const now = this.now();
    for (const wait of [...this.waits]) if (wait.dueAt <= now) wait.fire();
  }

  /** Moves the clock on to the start of its next minute (the sign-in throttle counts per minute). */
  startNextMinute(): void {
    this.advance(60_000 - (this.now() % 60_000));
  }

  /** The waits under way, as the time left to each, soonest first. */
  get waitsLeftMs(): number[] {
    const now = this.now();
    return [...this.waits].map((wait) => wait.dueAt - now).sort((a, b) => a - b);
  }
}
