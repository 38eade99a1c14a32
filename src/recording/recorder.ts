import { isDatabaseUnavailable, isMissingPartition } from '../database/databaseErrors';
import type { PooledTransactions } from '../database/transaction';
import type { StatusConflict } from '../domain/outcomes';
import type { Logger } from '../observability/logger';
import type { Notification } from '../parsing/notification';
import { meaningOf, type BatchDecision, type BatchItem } from './batch';
import { KnownNotifications } from './knownNotifications';
import type { Delivery, NotificationStore, QuarantineCause, DeliveryKept, DeliveryAnswer } from './notificationStore';
import type { RecordingContext } from './projectionFold';
import { KeptOrders } from './keptOrders';
import { GuardFailed, LockSetChanged, recordBatch, recordQuarantine } from './recordBatch';
import { RecorderLane, type KeptStateResult } from './recorderLane';

export interface RecorderOptions {
  /** Most notifications in one transaction. */
  maxBatchSize: number;
  /**
   * Independent lanes, each running one transaction at a time (each holds one pool connection). An order
   * always goes to the same lane, so concurrent transactions never wait on each other's order locks, and
   * one lane's commit overlaps the next lane's statements.
   */
  lanes: number;
  /** Notifications waiting for a transaction; beyond it new ones are refused at once (load shedding). */
  maxQueued: number;
  /** Longest a notification waits for its transaction to start before it is refused. */
  maxWaitMs: number;
  /**
   * When the caller gets its answer. A notification whose transaction has not reached COMMIT by then is
   * refused and its batch rolled back and run again without it, so such a refusal never comes with a
   * write; one whose COMMIT is on its way waits for the outcome, COMMIT_GRACE_MS more at most (past that
   * the answer is 503 and the COMMIT's outcome unknown).
   */
  answerWithinMs: number;
  /**
   * Committed notifications remembered for the duplicate fast path (RECORDER_KNOWN_NOTIFICATIONS in the service;
   * default 50,000, about 1.4 kB each; 0 turns it off).
   */
  knownCapacity?: number;
  /**
   * Orders whose state is kept so that their batches are one statement, without a read (RECORDER_KEPT_ORDERS in the
   * service, docs/decisions/0024; 0 turns it off: every batch reads).
   */
  keptOrders?: number;
  /** Told of each batch written, from kept state or after a read, and of each guard that failed. */
  onKeptState?: (result: KeptStateResult) => void;
  /** Told of every batch once it is settled: its size and how long its lane was busy with it. */
  onBatchDone?: (notifications: number, busySeconds: number) => void;
  /** Told when a write failed because its day of history has no partition: someone must make it now. */
  onMissingPartition?: () => void;
  /** Told of each status conflict a batch recorded, once it committed, whoever observed it. */
  onConflict?: (conflict: StatusConflict) => void;
  /** Told of every batch that committed, before its callers are answered (the journal takes its new notifications). */
  onCommitted?: (decision: BatchDecision) => void;
  /** Told of every body quarantined, once its transaction committed. */
  onQuarantined?: (delivery: Delivery, reason: QuarantineCause, detail: string) => void;
  /**
   * Whether the recorder holds its writes now (a failover's restoration runs): each new notification and quarantine
   * is refused at once, with RecorderHeld, and the sender retries.
   */
  isHeld?: () => boolean;
}

/** The recorder cannot take more now: answer 503 with Retry-After, the sender retries later. */
export class RecorderOverloaded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecorderOverloaded';
  }
}

/** The service is stopping: every notification the recorder still holds, and each later one, is refused. */
export class RecorderStopping extends Error {
  constructor() {
    super('the service is stopping');
    this.name = 'RecorderStopping';
  }
}

/** The recorder holds its writes while a failover's restoration runs: answer 503 with Retry-After. */
export class RecorderHeld extends Error {
  constructor() {
    super('the database failed over; what it lost is being restored');
    this.name = 'RecorderHeld';
  }
}

/** A batch member was refused while its statements ran: the batch must not commit. */
class BatchAbandoned extends Error {}

/** A stable lane per order (FNV-1a of the orderId). */
export function laneOf(orderId: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < orderId.length; i++) hash = Math.imul(hash ^ orderId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % lanes;
}

/**
 * Where a notification is: waiting in its lane's queue, in a batch whose statements run, in a batch whose
 * COMMIT was sent, or answered (recorded, or refused: a refused member of a running batch stops the batch
 * from committing).
 */
type PendingState = 'queued' | 'running' | 'committing' | 'answered';

interface Pending {
  delivery: Delivery;
  notification: Notification;
  lane: number;
  /** performance.now() when it was queued: the deadlines count from here. */
  since: number;
  state: PendingState;
  /** How many times its batch's guard failed: past GUARD_RERUNS, it is recorded on its own. */
  guardFailures: number;
  resolve(result: DeliveryAnswer): void;
  reject(error: Error): void;
}

/** How often the deadlines are checked; a refusal comes at most this much after its deadline. */
const DEADLINE_SWEEP_MS = 50;

/**
 * How much longer than its answer time a notification may wait for a COMMIT already sent. Past that the
 * statement fails, its connection is given up and the answer is 503; whether that COMMIT took effect is
 * then unknown (the sender's retry finds it recorded, or records it).
 */
const COMMIT_GRACE_MS = 500;

/**
 * How many times a batch runs again after its guard failed (each time by the reading path) before its members are
 * recorded one by one: a guard fails again only when another replica wrote one of its orders in between.
 */
const GUARD_RERUNS = 3;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** What a failed statement was, for the quarantine's detail: never a value (a message can quote one). */
function failureOf(error: Error): string {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  const what = typeof code === 'string' ? `SQLSTATE ${code}` : error.name;
  return `recording failed (${what}${typeof constraint === 'string' ? `, ${constraint}` : ''})`;
}

/**
 * Group commit: notifications that arrive while transactions are busy wait in a queue, and the next free
 * transaction records all of them at once (recordBatch.ts), so a burst costs one commit per batch instead
 * of one per notification. Each caller's promise settles only after the transaction holding its
 * notification committed, so "200 only after commit" holds for each of them.
 *
 * A batch failing for any reason but an unavailable database is run again one notification per
 * transaction, so one bad notification never fails the others; one that fails alone is quarantined
 * (kept, with the reason) rather than answered 500: an authentic notification never gets an error that
 * the sender's retry cannot cure.
 *
 * Exact repeats of notifications committed before (KnownNotifications) only append their delivery; a
 * batch of nothing else is one statement, its own transaction.
 */
export class Recorder implements NotificationStore {
  private readonly queues: Pending[][];
  /** The batch each lane is running, for the deadline sweep. */
  private readonly inFlight: Array<Pending[] | null>;
  private readonly known: KnownNotifications;
  private readonly kept: KeptOrders;
  /** Each lane's chain of commits, with the kept state they share. */
  private readonly lanes: RecorderLane[];
  private queued = 0;
  /** Set by refuseAll: every notification is refused from then on. */
  private refusing = false;
  /** How to refuse each quarantine whose transaction runs (refuseAll). */
  private readonly quarantining = new Set<(error: Error) => void>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly transactions: PooledTransactions,
    private readonly context: RecordingContext,
    private readonly options: RecorderOptions,
    private readonly logger?: Logger,
  ) {
    this.queues = Array.from({ length: options.lanes }, () => []);
    this.inFlight = this.queues.map(() => null);
    this.known = new KnownNotifications(options.knownCapacity ?? 50_000);
    this.kept = new KeptOrders(options.keptOrders ?? 0);
    this.lanes = this.queues.map(() => new RecorderLane(this.kept, options.maxBatchSize, options.onKeptState));
  }

  /**
   * A failover was noticed (the database watch): what is kept may be what the promoted database lost, so every lane's
   * next batch reads. The guards would catch it (docs/decisions/0024); this spares them the failures.
   */
  forgetKeptState(): void {
    this.kept.clear();
    for (const lane of this.lanes) lane.reset();
  }

  /** Notifications waiting, and lanes with a transaction running. */
  get load(): { queued: number; activeBatches: number } {
    return { queued: this.queued, activeBatches: this.inFlight.filter((b) => b !== null).length };
  }

  record(delivery: Delivery, notification: Notification): Promise<DeliveryAnswer> {
    if (this.refusing) return Promise.reject(new RecorderStopping());
    if (this.options.isHeld?.()) return Promise.reject(new RecorderHeld());
    if (this.queued >= this.options.maxQueued) {
      return Promise.reject(new RecorderOverloaded(`${this.queued} notifications already waiting`));
    }
    return new Promise<DeliveryAnswer>((resolve, reject) => {
      const pending: Pending = {
        delivery,
        notification,
        lane: laneOf(notification.orderId, this.queues.length),
        since: performance.now(),
        state: 'queued',
        guardFailures: 0,
        resolve: (result) => this.answer(pending, () => resolve(result)),
        reject: (error) => this.answer(pending, () => reject(error)),
      };
      (this.queues[pending.lane] as Pending[]).push(pending);
      this.queued += 1;
      this.sweeper ??= setInterval(() => this.sweep(), DEADLINE_SWEEP_MS).unref();
      this.pump(pending.lane);
    });
  }

  /**
   * Answers every notification not answered yet with a refusal, and each later one at once: the service is
   * stopping and about to cut its connections, and a 503 tells the sender to retry where a cut connection
   * tells it nothing. Nothing of a queued or running notification is written (its batch sees a member
   * answered and does not commit). One whose COMMIT is on its way may still commit, as may a quarantine (its
   * write leaves with its COMMIT); the sender's retry then finds it recorded.
   */
  refuseAll(): void {
    this.refusing = true;
    for (const refuse of this.quarantining) refuse(new RecorderStopping());
    for (const queue of this.queues) {
      for (const pending of queue.splice(0)) pending.reject(new RecorderStopping());
    }
    this.queued = 0;
    for (const batch of this.inFlight) {
      for (const pending of batch ?? []) pending.reject(new RecorderStopping());
    }
  }

  /** Quarantines are rare: one statement each, its own transaction. */
  quarantine(delivery: Delivery, reason: QuarantineCause, detail: string): Promise<DeliveryKept> {
    if (this.refusing) return Promise.reject(new RecorderStopping());
    if (this.options.isHeld?.()) return Promise.reject(new RecorderHeld());
    return new Promise<DeliveryKept>((resolve, reject) => {
      this.quarantining.add(reject);
      this.transactions
        .transaction((trx) => recordQuarantine(trx, delivery, reason, detail))
        .then(
          (kept) => {
            this.options.onQuarantined?.(delivery, reason, detail);
            resolve(kept);
          },
          (error: unknown) => {
            this.noticeMissingPartition(error);
            reject(asError(error));
          },
        )
        .finally(() => this.quarantining.delete(reject));
    });
  }

  private noticeMissingPartition(error: unknown): void {
    if (isMissingPartition(error)) this.options.onMissingPartition?.();
  }

  private answer(pending: Pending, settle: () => void): void {
    if (pending.state === 'answered') return;
    pending.state = 'answered';
    settle();
  }

  /**
   * The deadlines: a notification still queued after maxWaitMs (or answerWithinMs) is refused, nothing of
   * it written; one whose batch has not reached COMMIT by answerWithinMs is refused and its batch rolls back
   * and runs again without it. One whose COMMIT is on its way waits for it.
   */
  private sweep(): void {
    const now = performance.now();
    const queueLimit = Math.min(this.options.maxWaitMs, this.options.answerWithinMs);
    for (const queue of this.queues) {
      // Oldest first: stop at the first one still within its time.
      while (queue.length > 0 && now - (queue[0] as Pending).since >= queueLimit) {
        const pending = queue.shift() as Pending;
        this.queued -= 1;
        pending.reject(new RecorderOverloaded(`waited over ${queueLimit} ms for a transaction`));
      }
    }
    for (const batch of this.inFlight) this.refuseLate(batch ?? [], now);
    if (this.queued === 0 && this.inFlight.every((b) => b === null) && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /**
   * Refuses the members of a running batch whose answer time has passed; the batch must then roll back.
   * Called by the sweep, and again right before the batch's write leaves with its COMMIT, so the sweep's
   * granularity can never let a late member through to a commit.
   */
  private refuseLate(batch: readonly Pending[], now: number): void {
    for (const pending of batch) {
      if (pending.state === 'running' && this.timeLeft(pending, now) <= 0) {
        pending.reject(new RecorderOverloaded(`no commit within ${this.options.answerWithinMs} ms`));
      }
    }
  }

  private pump(lane: number): void {
    const queue = this.queues[lane] as Pending[];
    if (this.inFlight[lane] || queue.length === 0) return;
    const batch = queue.splice(0, this.options.maxBatchSize);
    this.queued -= batch.length;
    this.inFlight[lane] = batch;
    const started = performance.now();
    void this.run(batch).finally(() => {
      this.options.onBatchDone?.(batch.length, (performance.now() - started) / 1000);
      this.inFlight[lane] = null;
      this.pump(lane);
    });
  }

  /** One transaction for the batch (recordBatch.ts); nothing commits once a member was refused in the meantime. */
  private async commit(batch: Pending[]): Promise<DeliveryAnswer[]> {
    const items: BatchItem[] = batch.map(({ delivery, notification }) => {
      const known = this.known.repeatOf(meaningOf(notification), delivery.bodySha256, delivery.signers);
      return known ? { delivery, notification, known } : { delivery, notification };
    });
    for (const p of batch) p.state = 'running';
    const lane = this.lanes[batch[0]?.lane ?? 0];
    const decision = await this.transactions.transaction((trx) =>
      recordBatch(trx, this.context, items, {
        ...(lane === undefined ? {} : { lane }),
        beforeWrite: () => {
          this.refuseLate(batch, performance.now());
          if (batch.some((p) => p.state === 'answered')) throw new BatchAbandoned();
          // The write and COMMIT leave together: once sent, the batch may commit.
          for (const p of batch) p.state = 'committing';
        },
        writeTimeoutMs: () => this.commitTimeout(batch),
      }),
    );
    this.known.remember(decision.known);
    for (const conflict of decision.conflicts) this.options.onConflict?.(conflict);
    this.options.onCommitted?.(decision);
    return decision.results;
  }

  /** How long until a notification's answer time (negative once it has passed). */
  private timeLeft(pending: Pending, now = performance.now()): number {
    return this.options.answerWithinMs - (now - pending.since);
  }

  /** Time left for a batch's committing statements: its oldest member's answer time, plus the grace. */
  private commitTimeout(batch: readonly Pending[]): number {
    const now = performance.now();
    return Math.max(0, Math.min(...batch.map((p) => this.timeLeft(p, now)))) + COMMIT_GRACE_MS;
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      const results = await this.commit(batch);
      batch.forEach((p, i) => p.resolve(results[i] as DeliveryAnswer));
    } catch (error) {
      const live = batch.filter((p) => p.state !== 'answered');
      if (error instanceof BatchAbandoned || error instanceof LockSetChanged) {
        // The others go back to the front of their lane, in order, and run again at once.
        this.requeue(...live);
        return;
      }
      if (error instanceof GuardFailed) {
        for (const p of live) p.guardFailures += 1;
        // Again at once, by the reading path (the lane's chain is broken); past the reruns, one by one.
        if (live.every((p) => p.guardFailures <= GUARD_RERUNS)) {
          this.requeue(...live);
          return;
        }
      }
      if (isDatabaseUnavailable(error)) {
        this.noticeMissingPartition(error);
        for (const p of live) p.reject(asError(error));
        return;
      }
      // Isolate the bad notification: one transaction each (skipping any refused meanwhile).
      for (const p of live) {
        if (p.state === 'answered') continue;
        try {
          const [result] = await this.commit([p]);
          p.resolve(result as DeliveryAnswer);
        } catch (single) {
          if (single instanceof LockSetChanged) this.requeue(p);
          else if (single instanceof GuardFailed && ++p.guardFailures <= 2 * GUARD_RERUNS) this.requeue(p);
          else if (single instanceof BatchAbandoned) p.reject(new RecorderOverloaded('no commit in time'));
          else if (isDatabaseUnavailable(single)) {
            this.noticeMissingPartition(single);
            p.reject(asError(single));
          } else await this.quarantineUnrecordable(p, asError(single));
        }
      }
    }
  }

  private requeue(...pending: Pending[]): void {
    for (const p of pending) p.state = 'queued';
    this.queues[pending[0]?.lane ?? 0]?.unshift(...pending);
    this.queued += pending.length;
  }

  /** An authentic notification the recorder cannot apply is kept, with what failed, and answered 200. */
  private async quarantineUnrecordable(pending: Pending, error: Error): Promise<void> {
    const detail = failureOf(error);
    this.logger?.error(
      { err: { name: error.name, code: (error as { code?: unknown }).code }, orderId: pending.notification.orderId },
      'notification could not be recorded; quarantined',
    );
    try {
      pending.resolve(await this.quarantine(pending.delivery, 'unrecordable', detail));
    } catch (quarantineError) {
      pending.reject(asError(quarantineError));
    }
  }
}
