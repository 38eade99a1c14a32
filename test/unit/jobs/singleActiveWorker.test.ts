import pg from 'pg';
import {
  SingleActiveWorker,
  type ActiveLock,
  type NextStep,
  type SingleActiveWorkerOptions,
} from '../../../src/jobs/singleActiveWorker';
import type { SessionLockOptions } from '../../../src/database/sessionLock';
import { createLogger } from '../../../src/observability/logger';

// The loop of the relay, the reconciler and the partition maintainer, on a lock of the test's own and jest's clock:
// which steps run, when, and what is logged, as the lock is taken, lost and failed on.

/** A lock another replica may hold: `free` says whether hold() can take it. No connection is ever opened. */
class TestLock implements ActiveLock {
  free = true;
  held = false;
  connection: pg.Client | null = null;
  releases = 0;
  constructor(private readonly options: SessionLockOptions) {}
  get isHeld(): boolean {
    return this.held;
  }
  hold(): Promise<boolean> {
    this.connection ??= new pg.Client();
    if (!this.held && this.free) this.change(true);
    return Promise.resolve(this.held);
  }
  release(): Promise<void> {
    this.releases += 1;
    this.connection = null;
    if (this.held) this.change(false);
    return Promise.resolve();
  }
  /** The session ended under it (another replica may then take the lock). */
  lose(): void {
    this.connection = null;
    this.free = false;
    if (this.held) this.change(false);
  }
  private change(held: boolean): void {
    this.held = held;
    this.options.onChange(held);
  }
}

interface Harness {
  worker: SingleActiveWorker;
  lock: () => TestLock;
  /** Date.now() (jest's) at each step. */
  steps: number[];
  lines: Array<{ msg: string; active?: boolean; err?: { message: string } }>;
  gauge: number[];
}

function harness(step: (n: number) => Promise<NextStep>, more: Partial<SingleActiveWorkerOptions> = {}): Harness {
  const lines: Harness['lines'] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const steps: number[] = [];
  const gauge: number[] = [];
  let lock: TestLock | null = null;
  const worker = new SingleActiveWorker({
    lock: { key: 1, databaseUrl: 'postgres://unused', job: 'test' },
    logger,
    lines: { active: 'test is active', standby: 'test is standing by', failed: 'test failed' },
    activeGauge: { set: (value) => void gauge.push(value) },
    standbyMs: 1000,
    backoff: { firstMs: 250, maxMs: 1000, jitter: 'none' },
    step: () => {
      steps.push(Date.now());
      return step(steps.length);
    },
    createLock: (options) => (lock = new TestLock(options)),
    ...more,
  });
  return { worker, lock: () => lock as TestLock, steps, lines, gauge };
}

const wait = (waitMs: number, wakeable = false): Promise<NextStep> => Promise.resolve({ waitMs, wakeable });

beforeEach(() => jest.useFakeTimers({ now: 0 }));
afterEach(() => jest.useRealTimers());

describe('SingleActiveWorker', () => {
  it('When it holds the lock, then it runs the step and waits as the step asks; a wake ends only a wakeable wait', async () => {
    const h = harness((n) => wait(n === 1 ? 0 : 500, n >= 3));
    h.worker.start();
    // Step 2's wait is not wakeable: a wake during it changes nothing.
    await jest.advanceTimersByTimeAsync(100);
    h.worker.wake();
    await jest.advanceTimersByTimeAsync(1100);
    expect(h.steps).toEqual([0, 0, 500, 1000]);
    expect(h.lines.map((l) => [l.msg, l.active])).toEqual([['test is active', true]]);
    expect(h.gauge).toEqual([1]);
    // Step 4's wait is wakeable: a wake ends it now.
    h.worker.wake();
    await jest.advanceTimersByTimeAsync(0);
    expect(h.steps).toEqual([0, 0, 500, 1000, 1200]);
    await h.worker.stop();
  });

  it('When a wake comes while a step runs, then the wakeable wait after it is skipped', async () => {
    const h = harness((n) => {
      if (n === 1) h.worker.wake();
      return wait(5000, true);
    });
    h.worker.start();
    await jest.advanceTimersByTimeAsync(100);
    expect(h.steps).toEqual([0, 0]);
    await h.worker.stop();
  });

  it('When the lock is lost to another replica, then it stands by: logged, gauge 0, no step, the lock tried every standbyMs', async () => {
    const h = harness(() => wait(300));
    h.worker.start();
    await jest.advanceTimersByTimeAsync(0);
    h.lock().lose();
    await jest.advanceTimersByTimeAsync(300 + 2000);
    expect(h.steps).toEqual([0]);
    expect(h.lines.map((l) => l.msg)).toEqual(['test is active', 'test is standing by']);
    expect(h.gauge).toEqual([1, 0]);
    // The other replica lets go: taken at the next try, a standbyMs after the one before.
    h.lock().free = true;
    await jest.advanceTimersByTimeAsync(1000);
    expect(h.steps).toEqual([0, 3300]);
    expect(h.gauge).toEqual([1, 0, 1]);
    await h.worker.stop();
  });

  it('When steps fail, then each is logged and told, the lock released, and the wait backs off from first, doubling to max; a success starts over', async () => {
    const failures: string[] = [];
    let failing = true;
    const h = harness((n) => (failing ? Promise.reject(new Error(`lost ${n}`)) : wait(10_000)), {
      onFailure: (error) => void failures.push(error.message),
    });
    h.worker.start();
    await jest.advanceTimersByTimeAsync(0 + 250 + 500 + 1000 + 1000);
    expect(h.steps).toEqual([0, 250, 750, 1750, 2750]);
    expect(failures).toEqual(['lost 1', 'lost 2', 'lost 3', 'lost 4', 'lost 5']);
    expect(h.lines.filter((l) => l.msg === 'test failed').map((l) => l.err?.message)).toHaveLength(5);
    expect(h.lock().releases).toBe(5);
    failing = false;
    await jest.advanceTimersByTimeAsync(1000);
    expect(h.steps).toEqual([0, 250, 750, 1750, 2750, 3750]);
    // After a success, the next failure waits the first back-off again.
    failing = true;
    await jest.advanceTimersByTimeAsync(10_000 + 250);
    expect(h.steps.slice(-2)).toEqual([13_750, 14_000]);
    await h.worker.stop();
  });

  it('When a back-off has a floor, then a failure waits at least that long', async () => {
    const h = harness(() => Promise.reject(new Error('lost')), {
      backoff: { firstMs: 250, maxMs: 30_000, jitter: 'none', atLeastMs: 5000 },
    });
    h.worker.start();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(h.steps).toEqual([0, 5000, 10_000]);
    await h.worker.stop();
  });

  it('When stopped while waiting, then the wait ends at once, no step runs after, onStop runs, and the lock is released', async () => {
    const stopped: string[] = [];
    const h = harness(() => wait(3_600_000), { onStop: () => Promise.resolve(void stopped.push('onStop')) });
    h.worker.start();
    await jest.advanceTimersByTimeAsync(1000);
    await h.worker.stop();
    expect(h.steps).toEqual([0]);
    expect(stopped).toEqual(['onStop']);
    expect(h.lock().isHeld).toBe(false);
    expect(h.gauge).toEqual([1, 0]);
    expect(h.worker.isStopping).toBe(true);
    // Started again, it takes the lock and steps anew.
    h.worker.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(h.steps).toEqual([0, 1000]);
    await h.worker.stop();
  });

  it('When stopped during a step, then the step finishes, and no other runs', async () => {
    let finish: () => void = () => undefined;
    const h = harness(
      () => new Promise<NextStep>((resolve) => (finish = () => resolve({ waitMs: 0, wakeable: false }))),
    );
    h.worker.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(h.worker.isStopping).toBe(false);
    const stopping = h.worker.stop();
    expect(h.worker.isStopping).toBe(true);
    finish();
    await stopping;
    expect(h.steps).toEqual([0]);
    expect(h.lock().isHeld).toBe(false);
  });
});
