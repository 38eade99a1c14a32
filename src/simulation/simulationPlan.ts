import type { Config } from '../config';
import { parseBasicCredentials, type BasicCredentials } from '../intake/requestChecks';
import {
  buildTraffic,
  freshSeed,
  parseSimulatorAlgorithm,
  PlanError,
  seededRandom,
  type Lifecycle,
  type LifecyclePlan,
  type PayMethodKind,
  type PlanBase,
  type RefundPlan,
  type SignatureHeaders,
  type SimulatorAlgorithm,
} from '../simulator';

/** The options of `simulate`, as commander parses them (src/cli/commands/simulate/index.ts declares them). */
export interface SimulateOptions {
  url?: string;
  posId?: string;
  key?: string;
  orders: number;
  random?: boolean;
  payMethod: PayMethodKind;
  autoReceive: boolean;
  cancel?: boolean;
  refund?: string[];
  conflict?: boolean;
  disagreement?: boolean;
  everyType?: boolean;
  amount: string;
  currency: string;
  algorithm: string;
  signatureHeader: SignatureHeaders;
  processingTime: boolean;
  basicAuth?: string;
  timeScale: number;
  gap: number;
  spread: number;
  duplicates: number;
  reorder: number;
  maxDelay: number;
  maxAttempts: number;
  timeout: number;
  concurrency: number;
  seed?: number;
  drop: number;
  apiPort?: number;
  apiState?: string;
  apiHold: number;
  keepRetrying?: boolean;
  json?: boolean;
}

/** What to send, where and as whom: everything the options decide before the first request. */
export interface SimulationPlan {
  url: string;
  posId: string;
  key: string;
  basicAuth: BasicCredentials | null;
  algorithm: SimulatorAlgorithm;
  seed: number;
  random: ReturnType<typeof seededRandom>;
  lifecycles: Lifecycle[];
}

interface RefundSpec {
  /** `full`, `partial` or minor units. */
  amount: string;
  status: 'FINALIZED' | 'CANCELED';
  pending: boolean;
  conflict: boolean;
}

/**
 * `full`, `partial` or an amount in minor units, optionally followed by `:finalized` (the default), `:canceled`,
 * `:pending` (PENDING, then FINALIZED) or `:conflict` (FINALIZED, then CANCELED).
 */
function refundSpec(value: string): RefundSpec {
  const match = /^(full|partial|\d{1,18})(?::(finalized|canceled|pending|conflict))?$/i.exec(value.trim());
  if (!match)
    throw new PlanError(
      `--refund ${value}: must be full, partial or an amount, optionally with :finalized, :canceled, :pending or :conflict`,
    );
  const amount = (match[1] as string).toLowerCase();
  const modifier = match[2]?.toLowerCase();
  return {
    amount,
    status: modifier === 'canceled' ? 'CANCELED' : 'FINALIZED',
    pending: modifier === 'pending',
    conflict: modifier === 'conflict',
  };
}

/**
 * `--every-type`: two orders that between them make the service publish every event type, and a disagreement. The
 * first: PENDING, WAITING_FOR_CONFIRMATION, COMPLETED stating another total (order.completed with disagreements); a
 * refund notified PENDING then FINALIZED, one FINALIZED then CANCELED (refund.status_conflict), one CANCELED; then
 * CANCELED for the order (order.status_conflict). The second: PENDING, then CANCELED.
 */
function everyTypePlans(total: string): Array<Omit<LifecyclePlan, keyof PlanBase>> {
  const part = String(BigInt(total) / 4n || 1n);
  return [
    {
      payMethod: 'card',
      autoReceive: false,
      outcome: 'COMPLETED',
      totalAmount: total,
      disagreement: true,
      conflict: true,
      refunds: [
        { amount: part, status: 'FINALIZED', pending: true },
        { amount: part, status: 'FINALIZED', conflict: true },
        { amount: part, status: 'CANCELED' },
      ],
    },
    { payMethod: 'pbl', autoReceive: true, outcome: 'CANCELED', totalAmount: total, refunds: [] },
  ];
}

function algorithmOption(value: string): SimulatorAlgorithm {
  const algorithm = parseSimulatorAlgorithm(value);
  if (!algorithm) throw new PlanError(`--algorithm ${value}: must be MD5, SHA-1, SHA-256, SHA-384 or SHA-512`);
  return algorithm;
}

/** The POS and key: the flags, else the service's own SECOND_KEYS (the POS's first key, or the first entry). */
function signer(config: Config, options: SimulateOptions): { posId: string; key: string } {
  if (options.key !== undefined) {
    if (options.posId === undefined) throw new PlanError('--key needs --pos-id');
    return { posId: options.posId, key: options.key };
  }
  const configured = config.secondKeys.find((k) => options.posId === undefined || k.posId === options.posId);
  if (!configured) {
    throw new PlanError(
      options.posId === undefined
        ? 'no second key: pass --pos-id and --key, or set SECOND_KEYS'
        : `no second key for POS ${options.posId} in SECOND_KEYS: pass --key`,
    );
  }
  return { posId: configured.posId, key: configured.key.toString('utf8') };
}

/** The plan of a run, from the options and the service's configuration; a PlanError for what does not fit (the command's
 * usage error). */
export function planSimulation(config: Config, options: SimulateOptions): SimulationPlan {
  const url = options.url ?? `http://127.0.0.1:${config.port}/notifications`;
  try {
    new URL(url);
  } catch {
    throw new PlanError(`--url ${url}: not a URL`);
  }
  const { posId, key } = signer(config, options);

  let basicAuth = config.notifyBasicAuth;
  if (options.basicAuth !== undefined) {
    basicAuth = parseBasicCredentials(options.basicAuth);
    if (!basicAuth) throw new PlanError('--basic-auth must be user:password');
  }
  const algorithm = algorithmOption(options.algorithm);
  if (!/^\d{1,18}$/.test(options.amount) || BigInt(options.amount) < 1n)
    throw new PlanError('--amount must be a positive whole number of minor units');
  if (!/^[A-Z]{3}$/.test(options.currency)) throw new PlanError('--currency must be an ISO 4217 code such as PLN');
  const shaping = options.refund?.length || options.cancel || options.autoReceive === false;
  if (options.random && (shaping || options.conflict || options.disagreement)) {
    throw new PlanError(
      '--random chooses the lifecycle itself: drop --refund, --cancel, --no-auto-receive, --conflict and --disagreement',
    );
  }
  if (
    options.everyType &&
    (shaping || options.random || options.conflict || options.disagreement || options.orders !== 1)
  )
    throw new PlanError(
      '--every-type plays two orders of its own: drop --orders, --random, --refund, --cancel, --no-auto-receive, --conflict and --disagreement',
    );

  const refunds: RefundPlan[] = (options.refund ?? []).map(refundSpec).map((spec) => {
    const shape = {
      status: spec.status,
      ...(spec.pending ? { pending: true } : {}),
      ...(spec.conflict ? { conflict: true } : {}),
    };
    if (spec.amount === 'full') return shape;
    const amount = spec.amount === 'partial' ? String((BigInt(options.amount) * 3n) / 10n || 1n) : spec.amount;
    return { amount, ...shape };
  });
  const seed = options.seed ?? freshSeed();
  const random = seededRandom(seed);
  const base: Omit<PlanBase, 'startMs'> = {
    posId,
    notifyUrl: url,
    gapMs: options.gap,
    runStartedAt: new Date(),
    currencyCode: options.currency,
  };
  const plan: Omit<LifecyclePlan, keyof PlanBase> | 'random' = options.random
    ? 'random'
    : {
        payMethod: options.payMethod,
        autoReceive: options.autoReceive,
        outcome: options.cancel ? 'CANCELED' : 'COMPLETED',
        totalAmount: options.amount,
        refunds,
        ...(options.conflict ? { conflict: true } : {}),
        ...(options.disagreement ? { disagreement: true } : {}),
      };
  const lifecycles = options.everyType
    ? everyTypePlans(options.amount).flatMap((p) => buildTraffic({ orders: 1, plan: p, base, spreadMs: 0, random }))
    : buildTraffic({ orders: options.orders, plan, base, spreadMs: options.spread, random });
  return { url, posId, key, basicAuth, algorithm, seed, random, lifecycles };
}
