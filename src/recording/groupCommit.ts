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
}

/** A stable lane per order (FNV-1a of the orderId). */
export function laneOf(orderId: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < orderId.length; i++) hash = Math.imul(hash ^ orderId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % lanes;
}

/** The recorder cannot take more now: answer 503 with Retry-After, the sender retries later. */
export class RecorderOverloaded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecorderOverloaded';
  }
}

interface Pending {
  item: BatchItem;
  /** Refuses the notification if it is still waiting when maxWaitMs has passed. */
  expiry: NodeJS.Timeout;
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
    const lane = laneOf(notification.orderId, this.queues.length);
    const queue = this.queues[lane] as Pending[];
    return new Promise<RecordResult>((resolve, reject) => {
      const pending: Pending = {
        item: { delivery, notification },
        // Still waiting when the time is up: refused (503) before anything was written.
        expiry: setTimeout(() => {
          const index = queue.indexOf(pending);
          if (index === -1) return;
          queue.splice(index, 1);
          this.queued -= 1;
          reject(new RecorderOverloaded(`waited over ${this.options.maxWaitMs} ms for a transaction`));
        }, this.options.maxWaitMs),
        resolve,
        reject,
      };
      queue.push(pending);
      this.queued += 1;
      this.pump(lane);
    });
  }

  /** Quarantines are rare: one transaction each. */
  quarantine(delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult> {
    return recordQuarantine(this.db, delivery, reason, detail);
  }

  private pump(lane: number): void {
    const queue = this.queues[lane] as Pending[];
    if (this.busy[lane] || queue.length === 0) return;
    const batch = queue.splice(0, this.options.maxBatchSize);
    this.queued -= batch.length;
    for (const pending of batch) clearTimeout(pending.expiry);
    this.busy[lane] = true;
    void this.run(batch).finally(() => {
      this.busy[lane] = false;
      this.pump(lane);
    });
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      const results = await this.transactions((session) => recordBatchIn(session, this.context, batch.map((p) => p.item)));
      batch.forEach((p, i) => p.resolve(results[i] as RecordResult));
    } catch (error) {
      if (batch.length === 1 || isDatabaseUnavailable(error)) {
        for (const p of batch) p.reject(error);
        return;
      }
      for (const p of batch) {
        try {
          const [result] = await this.transactions((session) => recordBatchIn(session, this.context, [p.item]));
          p.resolve(result as RecordResult);
        } catch (single) {
          p.reject(single);
        }
      }
    }
  }
}
