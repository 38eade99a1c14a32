import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import { isDatabaseUnavailable, type Db, type TransactionRunner } from './database';
import type { NotificationStore } from './notificationStore';
import { recordBatchIn, type BatchItem } from './recordBatch';
import { recordQuarantine, type Delivery, type RecordingContext, type RecordResult } from './recordNotification';

export interface GroupCommitOptions {
  /** Most notifications in one transaction. */
  maxBatchSize: number;
  /**
   * Independent lanes, each running one transaction at a time (each holds one pool connection).
   * An order always goes to the same lane, so concurrent transactions never wait on each other's
   * order locks, and one lane's commit overlaps the next lane's statements.
   */
  lanes: number;
  /** Notifications waiting for a transaction; beyond it new ones are refused at once (load shedding). */
  maxQueued: number;
  /** Longest a notification waits for its transaction to start before it is refused. */
  maxWaitMs: number;
  /**
   * When the caller gets its answer at the latest. A notification whose transaction has not
   * reached COMMIT by then is refused and its batch rolled back and run again without it, so a
   * refusal never comes with a write; one whose COMMIT is on its way waits for the outcome.
   */
  answerWithinMs: number;
}

/** The recorder cannot take more now: answer 503 with Retry-After, the sender retries later. */
export class RecorderOverloaded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecorderOverloaded';
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

type PendingState = 'queued' | 'running' | 'committing' | 'abandoned';

interface Pending {
  item: BatchItem;
  lane: number;
  state: PendingState;
  answered: boolean;
  timers: NodeJS.Timeout[];
  resolve(result: RecordResult): void;
  reject(error: unknown): void;
}

/**
 * Group commit: notifications that arrive while transactions are busy wait in a queue, and the next
 * free transaction records all of them at once (recordBatchIn), so a burst costs one commit per
 * batch instead of one per notification. Each caller's promise settles only after the transaction
 * holding its notification committed, so "200 only after commit" holds for each of them.
 * A batch failing for any reason other than an unavailable database is retried one notification
 * per transaction, so one bad notification never fails the others.
 */
export class GroupCommitStore implements NotificationStore {
  private readonly queues: Pending[][];
  private readonly busy: boolean[];
  private queued = 0;

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly db: Db,
    private readonly context: RecordingContext,
    private readonly options: GroupCommitOptions,
  ) {
    this.queues = Array.from({ length: options.lanes }, () => []);
    this.busy = this.queues.map(() => false);
  }

  /** Notifications waiting, and lanes with a transaction running. */
  get load(): { queued: number; activeBatches: number } {
    return { queued: this.queued, activeBatches: this.busy.filter(Boolean).length };
  }

  record(delivery: Delivery, notification: Notification): Promise<RecordResult> {
    if (this.queued >= this.options.maxQueued) {
      return Promise.reject(new RecorderOverloaded(`${this.queued} notifications already waiting`));
    }
    return new Promise<RecordResult>((resolve, reject) => {
      const pending: Pending = {
        item: { delivery, notification },
        lane: laneOf(notification.orderId, this.queues.length),
        state: 'queued',
        answered: false,
        timers: [],
        resolve: (result) => this.settle(pending, () => resolve(result)),
        reject: (error) => this.settle(pending, () => reject(error)),
      };
      pending.timers.push(
        setTimeout(() => {
          if (pending.state === 'queued') this.refuse(pending, `waited over ${this.options.maxWaitMs} ms for a transaction`);
        }, this.options.maxWaitMs),
        setTimeout(() => {
          if (pending.state === 'queued') this.refuse(pending, `no transaction within ${this.options.answerWithinMs} ms`);
          else if (pending.state === 'running') {
            // Its batch sees this before COMMIT, rolls back and runs again without it.
            pending.state = 'abandoned';
            pending.reject(new RecorderOverloaded(`no commit within ${this.options.answerWithinMs} ms`));
          }
        }, this.options.answerWithinMs),
      );
      (this.queues[pending.lane] as Pending[]).push(pending);
      this.queued += 1;
      this.pump(pending.lane);
    });
  }

  /** Quarantines are rare: one transaction each. */
  quarantine(delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult> {
    return recordQuarantine(this.db, delivery, reason, detail);
  }

  private settle(pending: Pending, answer: () => void): void {
    if (pending.answered) return;
    pending.answered = true;
    for (const timer of pending.timers) clearTimeout(timer);
    answer();
  }

  /** Takes a waiting notification out of its queue and refuses it: nothing of it was written. */
  private refuse(pending: Pending, reason: string): void {
    const queue = this.queues[pending.lane] as Pending[];
    const index = queue.indexOf(pending);
    if (index !== -1) {
      queue.splice(index, 1);
      this.queued -= 1;
    }
    pending.reject(new RecorderOverloaded(reason));
  }

  private pump(lane: number): void {
    const queue = this.queues[lane] as Pending[];
    if (this.busy[lane] || queue.length === 0) return;
    const batch = queue.splice(0, this.options.maxBatchSize);
    this.queued -= batch.length;
    this.busy[lane] = true;
    void this.run(batch).finally(() => {
      this.busy[lane] = false;
      this.pump(lane);
    });
  }

  /** One transaction for the batch; nothing commits once a member was refused in the meantime. */
  private commit(batch: Pending[]): Promise<RecordResult[]> {
    for (const p of batch) p.state = 'running';
    return this.transactions(async (session) => {
      const results = await recordBatchIn(session, this.context, batch.map((p) => p.item));
      if (batch.some((p) => p.state === 'abandoned')) throw new BatchAbandoned();
      for (const p of batch) p.state = 'committing';
      return results;
    });
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      const results = await this.commit(batch);
      batch.forEach((p, i) => p.resolve(results[i] as RecordResult));
    } catch (error) {
      const live = batch.filter((p) => p.state !== 'abandoned');
      if (error instanceof BatchAbandoned) {
        // The others go back to the front of their lane, in order, and run again at once.
        for (const p of live) p.state = 'queued';
        this.queues[batch[0]?.lane ?? 0]?.unshift(...live);
        this.queued += live.length;
        return;
      }
      if (live.length <= 1 || isDatabaseUnavailable(error)) {
        for (const p of live) p.reject(error);
        return;
      }
      // Isolate the bad notification: one transaction each.
      for (const p of live) {
        try {
          const [result] = await this.commit([p]);
          p.resolve(result as RecordResult);
        } catch (single) {
          p.reject(single instanceof BatchAbandoned ? new RecorderOverloaded('no commit in time') : single);
        }
      }
    }
  }
}
