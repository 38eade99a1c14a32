import { createHash } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { orderBody, refundBody, uniqueId, type OrderFields, type RefundFields } from '../../support/signing';
import type { HttpResult } from './http';
import { deliveriesByBody, meanings, outbox } from './store';
import { BUYER } from './secrets';
import { sleep, waitUntil } from '../../support/wait';

/** One notification the payment service would send, with what it means. */
export interface Note {
  kind: 'order' | 'refund';
  orderId: string;
  /** orderId or refundId. */
  subject: string;
  status: string;
  body: Buffer;
  sha: string;
  /** `kind|subject|status`: deliveries with the same meaning are the same notification. */
  meaning: string;
}

function note(kind: Note['kind'], orderId: string, subject: string, status: string, text: string): Note {
  const body = Buffer.from(text, 'utf8');
  return {
    kind,
    orderId,
    subject,
    status,
    body,
    sha: createHash('sha256').update(body).digest('hex'),
    meaning: `${kind}|${subject}|${status}`,
  };
}

export function orderNote(fields: OrderFields): Note {
  return note('order', fields.orderId, fields.orderId, fields.status, orderBody(fields));
}

export function refundNote(fields: RefundFields): Note {
  return note('refund', fields.orderId, fields.refundId, fields.status, refundBody(fields));
}

/** A card payment: PENDING then COMPLETED (with the buyer), and for every second order a partial refund. */
export function cardLifecycles(
  prefix: string,
  orders: number,
): { notes: Note[]; orderIds: string[]; refundIds: string[] } {
  const notes: Note[] = [];
  const orderIds: string[] = [];
  const refundIds: string[] = [];
  for (let i = 0; i < orders; i += 1) {
    const orderId = uniqueId(prefix);
    const paymentId = String(70_000_000 + Math.floor(Math.random() * 9_999_999));
    orderIds.push(orderId);
    notes.push(orderNote({ orderId, status: 'PENDING', paymentId }));
    notes.push(
      orderNote({
        orderId,
        status: 'COMPLETED',
        paymentId,
        payMethodType: 'CARD_TOKEN',
        localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
        buyer: BUYER,
      }),
    );
    if (i % 2 === 0) {
      const refundId = uniqueId(`${prefix}R`);
      refundIds.push(refundId);
      notes.push(
        refundNote({ orderId, refundId, status: 'FINALIZED', amount: '5000', extRefundId: `shop-refund-${orderId}` }),
      );
    }
  }
  return { notes, orderIds, refundIds };
}

export function shuffle<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

export interface Attempt {
  note: Note;
  result: HttpResult;
}

/** Every delivery attempt of a scenario and what came back. */
export class Ledger {
  readonly attempts: Attempt[] = [];

  add(note: Note, result: HttpResult): HttpResult {
    this.attempts.push({ note, result });
    return result;
  }

  get requests(): number {
    return this.attempts.length;
  }

  /**
   * Waits until `n` more notifications than now have been answered 200: traffic has flowed for a while, however
   * fast the machine is (a fault is then injected into a service under load, not an idle one).
   */
  async flowing(n: number): Promise<void> {
    const from = this.ok;
    await waitUntil(`${n} more notifications accepted`, () => this.ok - from >= n, 60_000);
  }

  count(predicate: (a: Attempt) => boolean): number {
    return this.attempts.filter(predicate).length;
  }

  get ok(): number {
    return this.count((a) => a.result.status === 200);
  }

  get unavailable(): number {
    return this.count((a) => a.result.status === 503);
  }

  get unanswered(): number {
    return this.count((a) => a.result.status === 0);
  }

  maxLatencyMs(predicate: (a: Attempt) => boolean = () => true): number {
    return this.attempts.filter(predicate).reduce((max, a) => Math.max(max, a.result.ms), 0);
  }

  statuses(): Record<string, number> {
    const result: Record<string, number> = {};
    for (const a of this.attempts) {
      const key = a.result.status === 0 ? `no answer (${a.result.error})` : String(a.result.status);
      result[key] = (result[key] ?? 0) + 1;
    }
    return result;
  }

  /** Notes that never got a 200. */
  notAccepted(notes: readonly Note[]): Note[] {
    const accepted = new Set(this.attempts.filter((a) => a.result.status === 200).map((a) => a.note.sha));
    return notes.filter((n) => !accepted.has(n.sha));
  }
}

export interface CommitCheck {
  /** 200 answers whose delivery is not in the database: must be empty. */
  okButMissing: string[];
  /** Deliveries stored beyond the 200s for that body: only a refused (503) or unanswered attempt can explain them. */
  storedWithoutOk: number;
  /** Deliveries stored that no attempt at all explains. */
  unexplained: string[];
}

/**
 * "No 200 was ever given for something not committed": every 200 wrote exactly one delivery row
 * (the audit trail of what the sender did) and its meaning is recorded.
 */
export async function checkCommitted(url: string, ledger: Ledger): Promise<CommitCheck> {
  const stored = await deliveriesByBody(url);
  const recorded = await meanings(url);
  const perBody = new Map<string, { ok: number; other: number; note: Note }>();
  for (const { note: n, result } of ledger.attempts) {
    const entry = perBody.get(n.sha) ?? { ok: 0, other: 0, note: n };
    if (result.status === 200) entry.ok += 1;
    else if (result.status === 503 || result.status === 0) entry.other += 1;
    perBody.set(n.sha, entry);
  }
  const okButMissing: string[] = [];
  const unexplained: string[] = [];
  let storedWithoutOk = 0;
  for (const [sha, { ok, other, note: n }] of perBody) {
    const rows = stored.get(sha) ?? 0;
    if (rows < ok || (ok > 0 && !recorded.has(n.meaning)))
      okButMissing.push(`${n.meaning}: ${ok} answered 200, ${rows} deliveries stored`);
    if (rows > ok) storedWithoutOk += rows - ok;
    if (rows > ok + other) unexplained.push(`${n.meaning}: ${rows} deliveries for ${ok + other} attempts`);
  }
  for (const sha of stored.keys())
    if (!perBody.has(sha)) unexplained.push(`a delivery of a body never sent (${sha.slice(0, 12)})`);
  return { okButMissing, storedWithoutOk, unexplained };
}

export interface CloudEventBody {
  id: string;
  type: string;
  subject: string;
  data: {
    orderId: string;
    status: string;
    previousStatus: string | null;
    sequence: number;
    notificationId: string;
    refundId?: string;
  };
}

export interface EventCheck {
  outboxEvents: number;
  pending: number;
  messages: number;
  distinctConsumed: number;
  /** Repeats of an id (the documented at-least-once rule): allowed, counted. */
  redeliveries: number;
  problems: string[];
}

/**
 * Every committed event reached the consumer (by id), repeats carry the same id and content, and
 * each order's events arrived in sequence order without a gap (first arrivals 1, 2, 3, ...).
 */
export async function checkEvents(url: string, messages: readonly ConsumeMessage[]): Promise<EventCheck> {
  const rows = await outbox(url);
  const problems: string[] = [];
  const byId = new Map<string, { content: string; body: CloudEventBody }>();
  let redeliveries = 0;
  const arrival: CloudEventBody[] = [];
  for (const m of messages) {
    const content = m.content.toString('utf8');
    const body = JSON.parse(content) as CloudEventBody;
    if (m.properties.messageId !== body.id)
      problems.push(`messageId ${String(m.properties.messageId)} differs from the event id ${body.id}`);
    if (m.fields.routingKey !== body.type)
      problems.push(`routing key ${m.fields.routingKey} differs from type ${body.type}`);
    const seen = byId.get(body.id);
    if (seen) {
      redeliveries += 1;
      if (seen.content !== content) problems.push(`event ${body.id} redelivered with other content`);
      continue;
    }
    byId.set(body.id, { content, body });
    arrival.push(body);
  }
  const committed = new Set(rows.map((r) => r.id));
  const missing = rows.filter((r) => !byId.has(r.id));
  if (missing.length > 0)
    problems.push(
      `${missing.length} committed events never reached the consumer (e.g. ${JSON.stringify(missing.slice(0, 3))})`,
    );
  const extra = [...byId.keys()].filter((id) => !committed.has(id));
  if (extra.length > 0)
    problems.push(`${extra.length} consumed events are not in the outbox (e.g. ${extra.slice(0, 3).join(', ')})`);
  const lastSequence = new Map<string, number>();
  for (const e of arrival) {
    const previous = lastSequence.get(e.subject) ?? 0;
    if (e.data.sequence <= previous)
      problems.push(`order ${e.subject}: event sequence ${e.data.sequence} arrived after ${previous}`);
    else if (e.data.sequence !== previous + 1)
      problems.push(`order ${e.subject}: event sequence ${e.data.sequence} arrived next after ${previous} (a gap)`);
    lastSequence.set(e.subject, Math.max(previous, e.data.sequence));
  }
  const notifications = new Map<string, string>();
  for (const { body } of byId.values()) {
    const other = notifications.get(body.data.notificationId);
    if (other)
      problems.push(
        `notification ${body.data.notificationId} was published under two event ids (${other}, ${body.id})`,
      );
    notifications.set(body.data.notificationId, body.id);
  }
  return {
    outboxEvents: rows.length,
    pending: rows.filter((r) => !r.published).length,
    messages: messages.length,
    distinctConsumed: byId.size,
    redeliveries,
    problems,
  };
}

/** Polls until the outbox is drained and the consumer has every committed event; returns the last check. */
export async function waitForEvents(
  url: string,
  messages: readonly ConsumeMessage[],
  timeoutMs = 30_000,
): Promise<EventCheck & { waitedMs: number }> {
  const started = Date.now();
  for (;;) {
    const result = await checkEvents(url, messages);
    const complete = result.pending === 0 && result.distinctConsumed >= result.outboxEvents;
    if (complete || Date.now() - started > timeoutMs) return { ...result, waitedMs: Date.now() - started };
    await sleep(200);
  }
}
