import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import { isDatabaseUnavailable, type Db } from './database';
import type { NotificationStore } from './notificationStore';
import { recordBatchIn, type BatchItem } from './recordBatch';
import { recordQuarantine, type Delivery, type RecordingContext, type RecordResult } from './recordNotification';

export interface GroupCommitOptions {
  /** Most notifications in one transaction. */
  maxBatchSize: number;
  /** Transactions in flight at once (each holds one pool connection). */
  maxConcurrentBatches: number;
  /** Notifications waiting for a transaction; beyond it new ones are refused at once (load shedding). */
  maxQueued: number;
  /** Longest a notification waits for its transaction to start before it is refused. */
  maxWaitMs: number;
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
  enqueuedAt: number;
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
  private readonly queue: Pending[] = [];
  private active = 0;

  constructor(
    private readonly db: Db,
    private readonly context: RecordingContext,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Notifications waiting plus transactions running: a gauge of how busy the recorder is. */
  get load(): { queued: number; activeBatches: number } {
    return { queued: this.queue.length, activeBatches: this.active };
  }

  record(delivery: Delivery, notification: Notification): Promise<RecordResult> {
    if (this.queue.length >= this.options.maxQueued) {
      return Promise.reject(new RecorderOverloaded(`${this.queue.length} notifications already waiting`));
    }
    return new Promise<RecordResult>((resolve, reject) => {
      this.queue.push({ item: { delivery, notification }, enqueuedAt: Date.now(), resolve, reject });
      this.pump();
    });
  }

  /** Quarantines are rare: one transaction each. */
  quarantine(delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult> {
    return recordQuarantine(this.db, delivery, reason, detail);
  }

  private pump(): void {
    while (this.active < this.options.maxConcurrentBatches && this.queue.length > 0) {
      const oldestAllowed = Date.now() - this.options.maxWaitMs;
      const batch: Pending[] = [];
      while (batch.length < this.options.maxBatchSize && this.queue.length > 0) {
        const pending = this.queue.shift() as Pending;
        if (pending.enqueuedAt < oldestAllowed) pending.reject(new RecorderOverloaded(`waited over ${this.options.maxWaitMs} ms`));
        else batch.push(pending);
      }
      if (batch.length === 0) continue;
      this.active += 1;
      void this.run(batch).finally(() => {
        this.active -= 1;
        this.pump();
      });
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      const results = await this.db.transaction().execute((trx) => recordBatchIn(trx, this.context, batch.map((p) => p.item)));
      batch.forEach((p, i) => p.resolve(results[i] as RecordResult));
    } catch (error) {
      if (batch.length === 1 || isDatabaseUnavailable(error)) {
        for (const p of batch) p.reject(error);
        return;
      }
      for (const p of batch) {
        try {
          const [result] = await this.db.transaction().execute((trx) => recordBatchIn(trx, this.context, [p.item]));
          p.resolve(result as RecordResult);
        } catch (single) {
          p.reject(single);
        }
      }
    }
  }
}
