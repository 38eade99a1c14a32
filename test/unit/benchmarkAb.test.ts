import { parseAbOptions, WORKLOADS, type AbOptions } from '../benchmark/abOptions';
import { reusableNodeModules } from '../benchmark/abRef';
import { postgresRole } from '../benchmark/resources';
import { pairedRatios, t975 } from '../benchmark/stats';

// The A/B mode's pure parts (`npm run bench -- --ab <ref>`, test/benchmark/ab.ts): its options, the reuse of
// node_modules, the attribution of Postgres processes, and the statistics of the pairs.

const parsed = (...args: string[]): AbOptions => {
  const options = parseAbOptions(args);
  if ('error' in options) throw new Error(options.error);
  return options;
};
const refused = (...args: string[]): string => {
  const options = parseAbOptions(args);
  if (!('error' in options)) throw new Error(`accepted: ${args.join(' ')}`);
  return options.error;
};

describe("the A/B mode's options", () => {
  it("When only a ref is given, then 8 rounds of 10 s in 2-s slices after 5 s of warm-up, 32 connections, the benchmark's workload", () => {
    expect(parsed('--ab', '09a354a')).toEqual({
      ref: '09a354a',
      rounds: 8,
      seconds: 10,
      sliceSeconds: 2,
      warmUpSeconds: 5,
      connections: 32,
      workloadName: 'bench',
      workload: { waitingStep: true, refunds: true, repeatShare: 0.2, randomIds: false },
    });
  });

  it("When the outside A/B's workload is asked, then each order is PENDING then COMPLETED, no refunds, 20 % repeats", () => {
    expect(parsed('--ab', 'main', '--workload', 'two-step').workload).toEqual(WORKLOADS['two-step']);
    expect(WORKLOADS['two-step']).toEqual({ waitingStep: false, refunds: false, repeatShare: 0.2, randomIds: false });
  });

  it('When refunds, repeats, connections, rounds and seconds are given, then they replace the defaults', () => {
    const options = parsed(
      '--ab=main',
      '--workload',
      'two-step',
      '--refunds',
      '--repeats',
      '0.35',
      '--connections',
      '16',
      '--rounds',
      '20',
      '--seconds',
      '6',
      '--slice',
      '3',
      '--warm-up',
      '0',
    );
    expect(options).toMatchObject({
      ref: 'main',
      rounds: 20,
      seconds: 6,
      sliceSeconds: 3,
      warmUpSeconds: 0,
      connections: 16,
    });
    expect(options.workload).toEqual({ waitingStep: false, refunds: true, repeatShare: 0.35, randomIds: false });
    expect(parsed('--ab', 'main', '--no-refunds').workload.refunds).toBe(false);
    expect(parsed('--ab', 'main', '--seconds', '1').sliceSeconds).toBe(1);
    expect(parsed('--ab', '09a354a', '--b', 'main')).toMatchObject({ ref: '09a354a', b: 'main' });
  });

  it.each([
    [['--ab'], /argument missing/],
    [['--rounds', '8'], /--ab takes a git ref/],
    [['--ab', '--rounds'], /argument is ambiguous|--ab takes a git ref/],
    [['--ab', 'main', '--b=-x'], /--b takes a git ref/],
    [['--ab', 'main', '--rounds', '7'], /--rounds takes a whole number from 8/],
    [['--ab', 'main', '--rounds', '8.5'], /--rounds takes a whole number/],
    [['--ab', 'main', '--seconds', '0'], /--seconds takes a whole number from 1/],
    [['--ab', 'main', '--slice', '11'], /--slice takes a whole number from 1 to 10/],
    [['--ab', 'main', '--connections', 'many'], /--connections takes a whole number/],
    [['--ab', 'main', '--repeats', '0.6'], /--repeats takes a share from 0 to 0.5/],
    [['--ab', 'main', '--repeats', ''], /--repeats takes a share/],
    [['--ab', 'main', '--workload', 'mine'], /--workload is one of bench, two-step/],
    [['--ab', 'main', '--speed', 'fast'], /Unknown option '--speed'/],
    [['--ab', 'main', 'extra'], /Unexpected argument 'extra'/],
  ])('When given %j, then it is refused, saying what is wrong', (args, message) => {
    expect(refused(...args)).toMatch(message);
  });
});

describe('node_modules reused for the ref', () => {
  const lock = (packages: Record<string, { version: string; integrity?: string }>) => ({
    packages: { '': {}, ...packages },
  });
  const here = lock({
    'node_modules/pg': { version: '8.23.1', integrity: 'sha512-pg' },
    'node_modules/@types/pg': { version: '8.23.1', integrity: 'sha512-types' },
    'node_modules/escape-html': { version: '1.0.3', integrity: 'sha512-escape' },
  });

  it("When the ref's lockfile names only packages this tree has, the same, then this tree's node_modules serve it", () => {
    expect(
      reusableNodeModules(lock({ 'node_modules/pg': { version: '8.23.1', integrity: 'sha512-pg' } }), here),
    ).toEqual({
      reusable: true,
    });
  });

  it('When the ref has another version, or a package this tree lacks, then it gets its own npm ci, saying why', () => {
    expect(
      reusableNodeModules(lock({ 'node_modules/pg': { version: '8.20.0', integrity: 'sha512-old' } }), here),
    ).toEqual({
      reusable: false,
      reason: 'node_modules/pg is 8.20.0 there, 8.23.1 here',
    });
    expect(reusableNodeModules(lock({ 'node_modules/left-pad': { version: '1.3.0' } }), here)).toMatchObject({
      reusable: false,
    });
  });

  it('When this tree nests a package inside one the ref installs, then it is not reused (the nested one would shadow)', () => {
    const nested = lock({
      'node_modules/pg': { version: '8.23.1', integrity: 'sha512-pg' },
      'node_modules/pg/node_modules/@scope/buffer': { version: '2.0.0' },
    });
    expect(
      reusableNodeModules(lock({ 'node_modules/pg': { version: '8.23.1', integrity: 'sha512-pg' } }), nested),
    ).toEqual({
      reusable: false,
      reason:
        "node_modules/pg/node_modules/@scope/buffer (this tree's) would shadow what node_modules/pg resolves there",
    });
  });
});

describe('Postgres processes, by their titles', () => {
  const ours = new Map([['bench_ab_1_abc_0a', 'A.postgres']]);

  it.each([
    ['/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main', 'postmaster'],
    ['postgres: 15/main: postgres bench_ab_1_abc_0a 127.0.0.1(51234) idle', { backendOf: 'bench_ab_1_abc_0a' }],
    ['postgres: postgres bench_ab_1_abc_0a [local] COMMIT', { backendOf: 'bench_ab_1_abc_0a' }],
    ['postgres: 15/main: autovacuum worker bench_ab_1_abc_0a', { backendOf: 'bench_ab_1_abc_0a' }],
    ['postgres: 15/main: postgres test_4f2a 127.0.0.1(40000) INSERT', 'elsewhere'],
    ['postgres: 15/main: postgres test_4f2a [local] idle', 'elsewhere'],
    ['postgres: 15/main: checkpointer', 'server'],
    ['postgres: 15/main: walwriter', 'server'],
  ])('When a process is titled %j, then it is %j', (title, role) => {
    expect(postgresRole(title, ours)).toEqual(role);
  });
});

describe('paired ratios', () => {
  it('When t is asked for small and large samples, then it matches the tables (97.5th percentile)', () => {
    expect(t975(1)).toBe(12.706);
    expect(t975(7)).toBe(2.365);
    expect(t975(30)).toBe(2.042);
    expect(t975(40)).toBeCloseTo(2.021, 3);
    expect(t975(120)).toBeCloseTo(1.98, 3);
    expect(() => t975(0)).toThrow(RangeError);
  });

  it('When a ratio and its inverse are paired, then the geometric mean is 1 and the interval holds it', () => {
    const summary = pairedRatios([1.1, 1 / 1.1, 1.05, 1 / 1.05]);
    expect(summary.geometricMean).toBeCloseTo(1, 10);
    expect(summary.low).toBeLessThan(1);
    expect(summary.high).toBeGreaterThan(1);
    expect(summary).toMatchObject({ pairs: 4, above: 2, below: 2, even: 0 });
  });

  it('When every pair says B is about 5 % faster, then the interval excludes 1, and B won every round', () => {
    const summary = pairedRatios([1.04, 1.05, 1.06, 1.05, 1.045, 1.055, 1.05, 1.05]);
    expect(summary.geometricMean).toBeCloseTo(1.05, 2);
    expect(summary.low).toBeGreaterThan(1.04);
    expect(summary.high).toBeLessThan(1.06);
    expect(summary).toMatchObject({ above: 8, below: 0, median: 1.05, min: 1.04, max: 1.06 });
  });

  it('When pairs scatter by about 10 %, then it says how many pairs ±3 % would take', () => {
    const summary = pairedRatios([0.9, 1.1, 0.95, 1.05, 0.9, 1.1, 1, 1]);
    expect(summary.spread).toBeCloseTo(0.08, 2);
    // (1.96 × 0.08 / ln 1.03)² ≈ 28
    expect(summary.pairsToResolve).toBeGreaterThan(25);
    expect(summary.pairsToResolve).toBeLessThan(32);
    expect(() => pairedRatios([1])).toThrow(RangeError);
    expect(() => pairedRatios([1, 0])).toThrow(RangeError);
  });
});
