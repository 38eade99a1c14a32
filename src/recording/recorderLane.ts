import { randomBytes, randomUUID } from 'node:crypto';
import { meaningOf, type BatchItem, type BatchState, type BatchWrites } from './batch';
import type { LaneLink, WriteAnswer } from './batchQueries';
import type { KeptOrders } from './keptOrders';

/** How a batch was recorded: from kept state, after a read, or not at all, its guard having failed. */
export type KeptStateResult = 'kept' | 'read' | 'guard_failed';

/**
 * One recorder lane's chain of commits (docs/decisions/0024). Each write leaves a random token in the lane's row of
 * recorder_lanes and reserves ids for the lane's next batch; a batch decided from kept state (the fast path) expects
 * that token, so its one statement fails on a database that does not hold the lane's last commit (a promoted standby
 * that lost it) instead of writing beside a gap, with ids that database may hand out again. The time of a batch
 * decided without a read is the process clock, corrected by the database's as the last write answered it (committed).
 */
export class RecorderLane {
  /** The lane's row in recorder_lanes: one per lane per process. */
  readonly id = randomUUID();
  /** The token of the lane's last commit, null until a commit by the reading path (or after a failure). */
  private token: string | null = null;
  private ids: readonly string[] = [];
  /** The database's clock less the process's, as the last write answered (ms). */
  private offsetMs = 0;
  /** Whether a write of the lane committed yet. */
  private begun = false;
  /** The time of the lane's last batch (ms): no later batch of the lane is dated before it. */
  private lastTime = 0;

  constructor(
    private readonly kept: KeptOrders,
    /** The most ids a write reserves for the next batch: a batch's most new notifications. */
    private readonly idsPerBatch: number,
    /** Told of each batch written: decided from kept state, or after a read; and of each failed guard. */
    private readonly onResult?: (result: KeptStateResult) => void,
  ) {}

  /** The state of a batch decided without a read, or null when it must read (docs/decisions/0024, "Kept state"). */
  stateFor(items: readonly BatchItem[]): BatchState | null {
    if (this.token === null) return null;
    const meanings = new Set(items.filter((item) => !item.known).map((item) => meaningOf(item.notification)));
    if (meanings.size > this.ids.length) return null;
    return this.kept.stateFor(items, this.ids, databaseTime(Math.max(Date.now() + this.offsetMs, this.lastTime)));
  }

  /**
   * A read's state, dated no earlier than the lane's last batch: a batch decided without a read is dated by the
   * estimate of the database's clock, which may run a few milliseconds ahead of the next read's `now()`, and an
   * order's events (one lane each) must not go back in time from one to the next.
   */
  dated(state: BatchState): BatchState {
    return Date.parse(state.now) >= this.lastTime ? state : { ...state, now: databaseTime(this.lastTime) };
  }

  /**
   * The write's place in the chain: expecting the last commit's token on the fast path. It reserves ids for the next
   * batch as this one's new notifications go, twice over and 4 more (each costs a `nextval`; a next batch that needs
   * more reads, and its read reserves its own).
   */
  link(fast: boolean, newNotifications: number): LaneLink {
    return {
      lane: this.id,
      expected: fast ? this.token : null,
      token: randomBytes(8).readBigInt64BE().toString(),
      begins: !this.begun,
      idCount: Math.min(this.idsPerBatch, 2 * newNotifications + 4),
    };
  }

  /**
   * The write committed: the chain moves on, and what it wrote is kept. The clock's offset is the database's clock at
   * the statement's end less the process's when it was sent: never less than the true offset, so a batch decided
   * without a read is never dated before the database's clock (a failover's window is cut by it), at most the
   * statement's time after.
   */
  committed(state: BatchState, writes: BatchWrites, link: LaneLink, answer: WriteAnswer, sentAt: number): void {
    this.token = link.token;
    this.begun = true;
    this.lastTime = Math.max(this.lastTime, Date.parse(state.now));
    this.ids = answer.next_ids ?? [];
    this.offsetMs = Date.parse(answer.now) - sentAt;
    const given = (rows: WriteAnswer['order_revisions']) => new Map((rows ?? []).map((r) => [r.subject, r.given]));
    this.kept.keep(state, writes, { orders: given(answer.order_revisions), refunds: given(answer.refund_revisions) });
    this.onResult?.(link.expected === null ? 'read' : 'kept');
  }

  /**
   * The write failed, or its outcome is unknown: the next batch reads. When a guard failed, the batch's orders were not
   * as kept: they are forgotten.
   */
  broken(orderIds?: Iterable<string>): void {
    this.token = null;
    this.ids = [];
    if (orderIds === undefined) return;
    this.kept.forget(orderIds);
    this.onResult?.('guard_failed');
  }

  /** A failover was noticed: the next batch reads. */
  reset(): void {
    this.token = null;
    this.ids = [];
  }
}

/**
 * An instant as the database writes a timestamptz in JSON in UTC (`to_json(now())#>>'{}'`): no trailing zeros in the
 * fraction, `+00:00`. The same text the read gives where the server's TimeZone is UTC, the same instant everywhere.
 */
export function databaseTime(ms: number): string {
  const [seconds = '', fraction = ''] = new Date(ms).toISOString().slice(0, -1).split('.');
  const digits = fraction.replace(/0+$/, '');
  return `${seconds}${digits === '' ? '' : `.${digits}`}+00:00`;
}
