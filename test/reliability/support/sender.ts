import { postNotification, type HttpResult } from './http';
import { sleep } from '../../support/wait';
import type { Ingress } from './ingress';
import { cardLifecycles, shuffle, type Ledger, type Note } from './traffic';

/** An endless supply of realistic notifications (card payments, some refunded), shuffled in small batches. */
export class NoteStream {
  private buffer: Note[] = [];
  readonly orderIds: string[] = [];
  constructor(private readonly prefix: string) {}

  next(): Note {
    if (this.buffer.length === 0) {
      const batch = cardLifecycles(this.prefix, 8);
      this.orderIds.push(...batch.orderIds);
      this.buffer = shuffle(batch.notes);
    }
    return this.buffer.pop() as Note;
  }
}

/**
 * Where the requests go: one service's public port (it changes when the service is restarted), or
 * an ingress spreading them over replicas.
 */
export type SenderTarget = { port: () => number } | { ingress: Ingress };

export type SenderOptions = SenderTarget & {
  ledger: Ledger;
  stream: NoteStream;
  workers: number;
  /** Pause of each worker between two requests (paces the traffic). */
  pauseMs: number;
  /** Wait before a refused or unanswered delivery is sent again. */
  retryDelayMs: number;
  /** Share of requests that repeat a notification already accepted (the sender's duplicates). */
  duplicateRate?: number;
  /** Through an ingress: share of notifications sent to two or three replicas at the same moment. */
  sameMomentRate?: number;
  /** Client patience per request; reaching it is reported as `client_timeout` (a hang). */
  timeoutMs?: number;
  basicAuth?: boolean;
  /** Whether the service process is still there; finish() gives up at once when it is not. */
  alive?: () => boolean;
};

/**
 * The payment service's behaviour in miniature: notifications sent as status changes happen,
 * each on its own connection, anything but 200 sent again later, some sent twice.
 */
export class Sender {
  private halted = false;
  private fresh = true;
  private inFlight = 0;
  private readonly retries: Array<{ note: Note; at: number }> = [];
  private readonly acceptedShas = new Set<string>();
  private readonly acceptedNotes: Note[] = [];
  /** Every distinct notification sent at least once. */
  readonly sent = new Map<string, Note>();
  private lanes: Promise<void>[] = [];

  constructor(private readonly options: SenderOptions) {}

  start(): this {
    this.lanes = Array.from({ length: this.options.workers }, () => this.lane());
    return this;
  }

  /** Requests sent and not answered yet. */
  get unanswered(): number {
    return this.inFlight;
  }

  get pendingRetries(): number {
    return this.retries.length;
  }

  private take(): Note | null {
    const now = Date.now();
    const due = this.retries.findIndex((r) => r.at <= now);
    if (due >= 0) return (this.retries.splice(due, 1)[0] as { note: Note }).note;
    if (!this.fresh) return null;
    if (this.acceptedNotes.length > 0 && Math.random() < (this.options.duplicateRate ?? 0)) {
      return this.acceptedNotes[Math.floor(Math.random() * this.acceptedNotes.length)] as Note;
    }
    return this.options.stream.next();
  }

  private async lane(): Promise<void> {
    while (!this.halted) {
      const note = this.take();
      if (!note) {
        if (!this.fresh && this.retries.length === 0 && this.inFlight === 0) return;
        await sleep(20);
        continue;
      }
      this.sent.set(note.sha, note);
      this.inFlight += 1;
      const results = await this.post(note);
      this.inFlight -= 1;
      for (const result of results) {
        this.options.ledger.add(note, result);
        if (result.status === 200) {
          if (!this.acceptedShas.has(note.sha)) {
            this.acceptedShas.add(note.sha);
            this.acceptedNotes.push(note);
          }
        } else {
          this.retries.push({ note, at: Date.now() + this.options.retryDelayMs });
        }
      }
      if (this.options.pauseMs > 0) await sleep(this.options.pauseMs);
    }
  }

  /** One delivery, or through an ingress sometimes two or three copies at once on different replicas. */
  private async post(note: Note): Promise<HttpResult[]> {
    const options = { timeoutMs: this.options.timeoutMs ?? 15_000, basicAuth: this.options.basicAuth };
    const target: SenderTarget = this.options;
    if (!('ingress' in target)) return [await postNotification(target.port(), note.body, options)];
    const copies = Math.random() < (this.options.sameMomentRate ?? 0) ? 2 + Math.floor(Math.random() * 2) : 1;
    return copies === 1
      ? [await target.ingress.post(note.body, options)]
      : target.ingress.postCopies(note.body, copies, options);
  }

  /** No new notifications from now on; refused ones are still sent again until accepted. */
  async finish(timeoutMs: number): Promise<void> {
    this.fresh = false;
    const deadline = Date.now() + timeoutMs;
    let done = false;
    const lanes = Promise.all(this.lanes).then(() => {
      done = true;
    });
    while (!done) {
      if (this.options.alive && !this.options.alive()) {
        await this.halt();
        throw new Error(
          `the service process exited while ${this.retries.length} notifications were waiting to be sent again`,
        );
      }
      if (Date.now() > deadline) {
        await this.halt();
        throw new Error(`${this.retries.length} notifications still not accepted after ${timeoutMs} ms of retrying`);
      }
      await Promise.race([lanes, sleep(100)]);
    }
  }

  async halt(): Promise<void> {
    this.halted = true;
    this.fresh = false;
    await Promise.all(this.lanes);
  }

  /** Distinct notifications sent that never got a 200. */
  notAccepted(): Note[] {
    return [...this.sent.values()].filter((n) => !this.acceptedShas.has(n.sha));
  }
}
