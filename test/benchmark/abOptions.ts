/**
 * The A/B mode's command line (`npm run bench -- --ab <ref> [options]`), read into what a run does. Pure: no
 * file, process or database is touched here, so that bad input is refused before anything is made.
 */
import { parseArgs } from 'node:util';
import type { WorkloadShape } from './load';

/** The workloads by name: the benchmark's own, and the one of the A/B first run outside the project (issue 48). */
export const WORKLOADS = {
  /** The benchmark's: PENDING, every fifth order WAITING_FOR_CONFIRMATION, COMPLETED, every fourth refunded. */
  bench: { waitingStep: true, refunds: true, repeatShare: 0.2, randomIds: false },
  /** Each order a PENDING then a COMPLETED with buyer and pay method; no refunds. */
  'two-step': { waitingStep: false, refunds: false, repeatShare: 0.2, randomIds: false },
} as const satisfies Record<string, WorkloadShape>;

export type WorkloadName = keyof typeof WORKLOADS;

export interface AbOptions {
  /** The git ref of side A, as given; and of side B when it is not this tree. */
  ref: string;
  b?: string;
  rounds: number;
  /** Seconds each side is measured in a round (closed loop), in alternating slices of at most `sliceSeconds`. */
  seconds: number;
  sliceSeconds: number;
  /** Seconds of closed loop on each fresh service before it is measured. */
  warmUpSeconds: number;
  connections: number;
  workloadName: WorkloadName;
  workload: WorkloadShape;
}

/** Fewer pairs say nothing a reader could trust (issue 48 asks for at least 8). */
export const MIN_ROUNDS = 8;

export const AB_USAGE = `usage: npm run bench -- --ab <git ref> [options]
Runs the service built from <git ref> (A) and this tree's (B) round by round, each round on fresh databases with
a consumer bound, the two taking turns in slices (ABBA..., then BAAB...), and prints every pair's B/A throughput
and CPU per new notification: their geometric mean with a 95 % confidence interval, median and the rounds each won.
  --b <git ref>        B is that ref's service instead of this tree's (both built in temporary trees)
  --rounds <n>         paired rounds, ${MIN_ROUNDS} or more (default 8)
  --seconds <s>        seconds each side is measured in a round (default 10)
  --slice <s>          the sides take turns in slices of at most this long (default 2; = --seconds: one turn each)
  --warm-up <s>        seconds of closed loop on each fresh service before it is measured (default 5)
  --connections <n>    the closed loop's connections (default 32)
  --workload <name>    bench (default): PENDING, every fifth order WAITING_FOR_CONFIRMATION, COMPLETED with buyer
                       and pay method, every fourth refunded; two-step: PENDING then COMPLETED, no refunds
  --refunds, --no-refunds   refund every fourth order, or none (default: as the workload)
  --repeats <share>    the share of the stream repeating an earlier notification, 0 to 0.5 (default 0.2)
`;

/** Bad input on the command line: its message says what the option takes. */
class OptionError extends Error {}

/** An integer option within bounds (`fallback` when not given). */
function integer(name: string, given: string | undefined, fallback: number, min: number, max: number): number {
  if (given === undefined) return fallback;
  const value = Number(given);
  if (/^\d+$/.test(given) && value >= min && value <= max) return value;
  throw new OptionError(`--${name} takes a whole number from ${min} to ${max}, not "${given}"`);
}

const isWorkloadName = (name: string): name is WorkloadName => Object.hasOwn(WORKLOADS, name);

/**
 * Reads the A/B mode's arguments (everything after `npm run bench --`, `--ab` included). Returns the options, or
 * a message saying what is wrong (the caller prints it with the usage and exits 2).
 */
export function parseAbOptions(args: readonly string[]): AbOptions | { error: string } {
  try {
    return readAbOptions(args);
  } catch (error) {
    if (error instanceof OptionError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      return { error: (error as Error).message };
    }
    throw error;
  }
}

function readAbOptions(args: readonly string[]): AbOptions {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    allowNegative: true,
    options: {
      ab: { type: 'string' },
      b: { type: 'string' },
      rounds: { type: 'string' },
      seconds: { type: 'string' },
      slice: { type: 'string' },
      'warm-up': { type: 'string' },
      connections: { type: 'string' },
      workload: { type: 'string' },
      refunds: { type: 'boolean' },
      repeats: { type: 'string' },
    },
  });
  const ref = values.ab ?? '';
  if (ref === '' || ref.startsWith('-')) throw new OptionError('--ab takes a git ref (a branch, tag or commit)');
  if (values.b !== undefined && (values.b === '' || values.b.startsWith('-'))) {
    throw new OptionError('--b takes a git ref (a branch, tag or commit)');
  }
  const workloadName = values.workload ?? 'bench';
  if (!isWorkloadName(workloadName)) {
    throw new OptionError(`--workload is one of ${Object.keys(WORKLOADS).join(', ')}, not "${workloadName}"`);
  }
  const workload: WorkloadShape = { ...WORKLOADS[workloadName] };
  if (values.refunds !== undefined) workload.refunds = values.refunds;
  if (values.repeats !== undefined) {
    const share = Number(values.repeats);
    if (values.repeats.trim() === '' || !(share >= 0 && share <= 0.5)) {
      throw new OptionError(
        `--repeats takes a share from 0 to 0.5 (0.2: a fifth of the stream), not "${values.repeats}"`,
      );
    }
    workload.repeatShare = share;
  }
  const seconds = integer('seconds', values.seconds, 10, 1, 600);
  return {
    ref,
    ...(values.b === undefined ? {} : { b: values.b }),
    rounds: integer('rounds', values.rounds, 8, MIN_ROUNDS, 1000),
    seconds,
    sliceSeconds: integer('slice', values.slice, Math.min(2, seconds), 1, seconds),
    warmUpSeconds: integer('warm-up', values['warm-up'], 5, 0, 600),
    connections: integer('connections', values.connections, 32, 1, 1024),
    workloadName,
    workload,
  };
}

/** The workload in words, for the report's heading. */
export function describeWorkload({ workloadName, workload }: AbOptions): string {
  const steps = workload.waitingStep
    ? 'PENDING, every fifth WAITING_FOR_CONFIRMATION, COMPLETED'
    : 'PENDING, COMPLETED';
  return `${workloadName} (${steps}; ${workload.refunds ? 'every fourth order refunded' : 'no refunds'}; ${Math.round(workload.repeatShare * 100)} % repeats)`;
}
