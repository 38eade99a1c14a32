import type { Command } from 'commander';
import type { Disagreement, ObservedVia } from '../../database/schema';
import { redactedLine } from '../../domain/personalData';
import {
  orderOfRefund,
  readOrderStory,
  type DeliveryRow,
  type StoryNotification,
  type StoryOrder,
  type StoryRefund,
} from '../../orderStory/orderStoryQueries';
import type { StoredEventRow } from '../../outbox/outboxQueries';
import { readConfig, withDatabase } from './database';
import { action, EXIT_FAILURE, EXIT_OK, type CliIo, type CliState, type ExitCode } from './io';
import { idOption, withDatabaseUrl, withJson } from './options';
import { emit, iso, shortHex, table } from './output';

export interface DeliveryView {
  id: string;
  receivedAt: string | null;
  sourceAddress: string | null;
  /** notification, or reconciliation (read from the payment API: no source address). */
  observedVia: ObservedVia;
  posId: string;
  keyFingerprint: string;
  processingTimeMs: number | null;
  outcome: string;
  bodySha256: string;
}

export interface NotificationView {
  id: string;
  kind: string;
  subjectId: string;
  status: string;
  outcome: string;
  receivedAt: string | null;
  posId: string;
  keyFingerprint: string;
  bodySha256: string;
  /** null once purged. */
  bodyBytes: number | null;
  variants: Array<{ bodySha256: string; bodyBytes: number | null; firstReceivedAt: string | null }>;
  /** Facts it stated otherwise than the projection keeps (the projection kept its own values). */
  disagreements: Disagreement[];
  deliveries: DeliveryView[];
  /** Deliveries not listed (past the first 100 of a notification, counted without a row): how many, first and last. */
  repeatedDeliveries: { count: number; firstAt: string | null; lastAt: string | null } | null;
  /** Only with --show-bodies: the stored body as a reader without personal-data rights sees it. */
  body?: string | null;
}

export interface EventView {
  id: string;
  sequence: number;
  type: string;
  refundId: string | null;
  status: string | null;
  previousStatus: string | null;
  notificationId: string | null;
  createdAt: string | null;
  published: boolean;
  publishedAt: string | null;
  /** When the broker returned it on publishing: no queue was bound for its routing key. */
  unroutedAt: string | null;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
}

/** A notification of the story as `inspect` shows it; its body only with --show-bodies, personal data redacted. */
function notificationView(
  n: StoryNotification,
  deliveries: readonly DeliveryRow[],
  showBodies: boolean,
): NotificationView {
  const listed = deliveries.filter((d) => d.notificationId === n.id);
  return {
    id: n.id,
    kind: n.kind,
    subjectId: n.subjectId,
    status: n.status,
    outcome: n.outcome,
    receivedAt: iso(n.receivedAt),
    posId: n.posId,
    keyFingerprint: n.keyFingerprint,
    bodySha256: n.bodySha256,
    bodyBytes: n.body === null ? null : n.body.length,
    variants: n.variants.map((v) => ({
      bodySha256: v.bodySha256,
      bodyBytes: v.bodyBytes,
      firstReceivedAt: iso(v.firstReceivedAt),
    })),
    disagreements: n.disagreements,
    deliveries: listed.map((d) => ({
      id: d.id,
      receivedAt: iso(d.receivedAt),
      sourceAddress: d.sourceAddress,
      observedVia: d.observedVia,
      posId: d.posId,
      keyFingerprint: d.keyFingerprint,
      processingTimeMs: d.processingTimeMs,
      outcome: d.outcome,
      bodySha256: d.bodySha256,
    })),
    repeatedDeliveries:
      n.deliveries > listed.length
        ? {
            count: n.deliveries - listed.length,
            firstAt: iso(n.repeated?.firstAt ?? null),
            lastAt: iso(n.repeated?.lastAt ?? null),
          }
        : null,
    ...(showBodies ? { body: n.body === null ? null : redactedLine(n.body) } : {}),
  };
}

function eventView(e: StoredEventRow): EventView {
  return {
    id: e.id,
    sequence: Number(e.sequence),
    type: e.type,
    refundId: e.refundId,
    status: e.status,
    previousStatus: e.previousStatus,
    notificationId: e.notificationId,
    createdAt: iso(e.createdAt),
    published: e.publishedAt !== null,
    publishedAt: iso(e.publishedAt),
    unroutedAt: iso(e.unroutedAt),
    attempts: e.attempts,
    nextAttemptAt: iso(e.nextAttemptAt),
    lastError: e.lastError,
  };
}

/** A projection as `inspect` prints it: its fields, times as ISO text. */
function projectionOf(projection: StoryOrder | StoryRefund | null | undefined): Record<string, unknown> | null {
  if (!projection) return null;
  return Object.fromEntries(
    Object.entries(projection).map(([field, value]) => [field, value instanceof Date ? value.toISOString() : value]),
  );
}

function notificationLines(notifications: NotificationView[]): string[] {
  const lines: string[] = [];
  for (const n of notifications) {
    lines.push(
      `  #${n.id} ${n.kind} ${n.kind === 'refund' ? `${n.subjectId} ` : ''}${n.status}  ${n.outcome}  received ${n.receivedAt}  POS ${n.posId} key ${n.keyFingerprint}` +
        `  body ${shortHex(n.bodySha256)} ${n.bodyBytes === null ? '(purged)' : `${n.bodyBytes} B`}`,
    );
    for (const d of n.disagreements) lines.push(`      disagrees: ${d.field} ${d.received} (kept ${d.kept})`);
    for (const v of n.variants)
      lines.push(
        `      variant ${shortHex(v.bodySha256)} ${v.bodyBytes === null ? '(purged)' : `${v.bodyBytes} B`} first ${v.firstReceivedAt}`,
      );
    lines.push(
      ...table(
        n.deliveries.map((d) => [
          `      delivery #${d.id}`,
          `${d.receivedAt}`,
          d.observedVia === 'reconciliation'
            ? 'from reconciliation'
            : `${d.observedVia === 'restoration' ? 'restored from the journal, first ' : ''}from ${d.sourceAddress ?? '?'}`,
          `POS ${d.posId}`,
          `key ${d.keyFingerprint}`,
          `Svc-Processing-Time ${d.processingTimeMs === null ? '-' : `${d.processingTimeMs} ms`}`,
          d.outcome,
        ]),
      ),
    );
    if (n.repeatedDeliveries) {
      const { count, firstAt, lastAt } = n.repeatedDeliveries;
      lines.push(`      and ${count} more deliveries (counted, not listed) from ${firstAt} to ${lastAt}`);
    }
    if (n.body !== undefined) lines.push(`      body: ${n.body ?? '(purged)'}`);
  }
  return lines;
}

function eventLines(events: EventView[]): string[] {
  if (events.length === 0) return ['  none kept (published events are deleted after OUTBOX_RETENTION)'];
  return table(
    events.map((e) => [
      `  #${e.sequence}`,
      e.type + (e.refundId ? ` ${e.refundId}` : ''),
      `${e.previousStatus ?? '-'} -> ${e.status ?? '?'}`,
      `notification #${e.notificationId ?? '?'}`,
      e.id,
      e.published
        ? `published ${e.publishedAt}${e.unroutedAt ? ' (unrouted: no queue was bound for its routing key)' : ''}`
        : e.attempts === 0
          ? 'not published yet'
          : `NOT PUBLISHED (${e.attempts} failed attempt(s), last error: ${e.lastError ?? '?'}${e.nextAttemptAt ? `, next ${e.nextAttemptAt}` : ''})`,
    ]),
  );
}

function projectionLines(title: string, projection: Record<string, unknown> | null): string[] {
  if (!projection) return [`${title}: no projection (nothing applied yet)`];
  return [
    `${title}:`,
    ...Object.entries(projection).map(
      ([k, v]) => `  ${k.padEnd(22)} ${v === null ? '-' : typeof v === 'string' ? v : JSON.stringify(v)}`,
    ),
  ];
}

interface InspectOptions {
  databaseUrl?: string;
  json?: boolean;
  showBodies?: boolean;
}

export async function inspectOrder(io: CliIo, orderId: string, options: InspectOptions): Promise<ExitCode> {
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  return withDatabase(io, config, async (db) => {
    const story = await readOrderStory(db, orderId);
    if (!story || (!story.order && story.notifications.length === 0)) {
      io.stderr.write(`no order ${orderId}: no projection and no notification\n`);
      return EXIT_FAILURE;
    }
    const notifications = story.notifications.map((n) =>
      notificationView(n, story.deliveries, options.showBodies === true),
    );
    const events = story.events.map(eventView);
    const result = {
      kind: 'order',
      orderId,
      projection: projectionOf(story.order),
      refunds: story.refunds.map((r) => projectionOf(r)),
      notifications,
      events,
    };
    emit(io, options.json === true, result, () => [
      ...projectionLines(`Order ${orderId}`, result.projection),
      ...(story.refunds.length > 0
        ? [
            'Refunds:',
            ...story.refunds.map((r) => `  ${r.refundId}  ${r.status}  ${r.amount ?? '-'} ${r.currencyCode ?? ''}`),
          ]
        : []),
      `Notifications (${notifications.length}, in arrival order; bodies not shown):`,
      ...notificationLines(notifications),
      `Events (${events.length}):`,
      ...eventLines(events),
    ]);
    return EXIT_OK;
  });
}

/** A refund: found through the order it was recorded under, its part of that order's story. */
export async function inspectRefund(io: CliIo, refundId: string, options: InspectOptions): Promise<ExitCode> {
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  return withDatabase(io, config, async (db) => {
    const orderId = await orderOfRefund(db, refundId);
    const story = orderId === null ? null : await readOrderStory(db, orderId);
    const refund = story?.refunds.find((r) => r.refundId === refundId);
    if (!story || !refund) {
      io.stderr.write(`no refund ${refundId}: no projection and no notification\n`);
      return EXIT_FAILURE;
    }
    const notifications = story.notifications
      .filter((n) => n.kind === 'refund' && n.subjectId === refundId)
      .map((n) => notificationView(n, story.deliveries, options.showBodies === true));
    const events = story.events.filter((e) => e.refundId === refundId).map(eventView);
    const result = { kind: 'refund', refundId, orderId, projection: projectionOf(refund), notifications, events };
    emit(io, options.json === true, result, () => [
      ...projectionLines(`Refund ${refundId}`, result.projection),
      `Notifications (${notifications.length}, in arrival order; bodies not shown):`,
      ...notificationLines(notifications),
      `Events (${events.length}):`,
      ...eventLines(events),
    ]);
    return EXIT_OK;
  });
}

export function registerInspect(program: Command, io: CliIo, state: CliState): void {
  const inspect = program
    .command('inspect')
    .summary('show an order or refund: projection, notifications, deliveries, events')
    .description(
      'Shows everything recorded about one order or refund: the projection, every notification (status, arrival, ' +
        'outcome, body digest, variants), every delivery (time, source address, POS, key fingerprint, ' +
        'Svc-Processing-Time, outcome) and the outbox events with whether each was published. Raw bodies are never ' +
        'shown; --show-bodies shows their ids, amounts, currencies, statuses, dates and pay method type, every ' +
        'other field redacted.\n\n' +
        'Exit codes: 0 found; 1 nothing recorded under that id; 2 usage error.',
    );
  for (const [name, description, run] of [
    ['order', 'an order and its refunds', inspectOrder],
    ['refund', 'a refund', inspectRefund],
  ] as const) {
    const command = inspect
      .command(name)
      .description(
        `Shows ${description}: projection, notifications, deliveries and events.\n\nExit codes: 0 found; 1 not found; 2 usage error.`,
      )
      .argument(`<${name}Id>`, `the ${name === 'order' ? 'orderId' : 'refundId'} of the payment service`, idOption)
      .option(
        '--show-bodies',
        'also print the stored bodies, every field but ids, amounts, statuses and dates redacted',
      );
    withJson(withDatabaseUrl(command)).action(
      action(state, (id: string, options: InspectOptions) => run(io, id, options)),
    );
  }
}
