import { sql } from 'kysely';
import type { Command } from 'commander';
import type { Db } from '../../database/pool';
import type { Disagreement, ObservedVia } from '../../database/schema';
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
  /** Deliveries past the first 100, counted without a row each: how many, first and last. */
  repeatedDeliveries: { count: number; firstAt: string | null; lastAt: string | null } | null;
  /** Only with --show-bodies: the stored body with the buyer's personal data masked. */
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

const PERSONAL = '[personal data hidden]';

/** A stored body for display: JSON with the buyer and customer IP masked; anything else described, not shown. */
export function maskedBody(body: Buffer | null): string | null {
  if (body === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return `(${body.length} bytes, not JSON: not shown)`;
  }
  const order = (json as { order?: unknown } | null)?.order;
  if (typeof order === 'object' && order !== null) {
    const o = order as Record<string, unknown>;
    if ('buyer' in o) o.buyer = PERSONAL;
    if ('customerIp' in o) o.customerIp = PERSONAL;
  }
  return JSON.stringify(json);
}

async function notificationsWhere(
  db: Db,
  where: { orderId: string } | { refundId: string },
  showBodies: boolean,
): Promise<NotificationView[]> {
  let query = db
    .selectFrom('notifications')
    .select([
      'id',
      'kind',
      'subject_id',
      'status',
      'outcome',
      'received_at',
      'pos_id',
      'key_fingerprint',
      'body_sha256',
      'disagreements',
    ])
    .select(sql<number | null>`octet_length(body)`.as('body_bytes'))
    .orderBy('id');
  query =
    'orderId' in where
      ? query.where('order_id', '=', where.orderId)
      : query.where('kind', '=', 'refund').where('subject_id', '=', where.refundId);
  const rows = await query.execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [variants, deliveries, repeats, bodies] = await Promise.all([
    db
      .selectFrom('notification_variants')
      .select(['notification_id', 'body_sha256', 'first_received_at'])
      .select(sql<number | null>`octet_length(body)`.as('body_bytes'))
      .where('notification_id', 'in', ids)
      .orderBy('first_received_at')
      .execute(),
    db.selectFrom('deliveries').selectAll().where('notification_id', 'in', ids).orderBy('id').execute(),
    db.selectFrom('delivery_repeats').selectAll().where('notification_id', 'in', ids).execute(),
    showBodies
      ? db.selectFrom('notifications').select(['id', 'body']).where('id', 'in', ids).execute()
      : Promise.resolve([]),
  ]);
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    subjectId: r.subject_id,
    status: r.status,
    outcome: r.outcome,
    receivedAt: iso(r.received_at),
    posId: r.pos_id,
    keyFingerprint: r.key_fingerprint,
    bodySha256: r.body_sha256.toString('hex'),
    bodyBytes: r.body_bytes === null ? null : Number(r.body_bytes),
    variants: variants
      .filter((v) => v.notification_id === r.id)
      .map((v) => ({
        bodySha256: v.body_sha256.toString('hex'),
        bodyBytes: v.body_bytes === null ? null : Number(v.body_bytes),
        firstReceivedAt: iso(v.first_received_at),
      })),
    disagreements: r.disagreements ?? [],
    deliveries: deliveries
      .filter((d) => d.notification_id === r.id)
      .map((d) => ({
        id: d.id,
        receivedAt: iso(d.received_at),
        sourceAddress: d.source_address,
        observedVia: d.observed_via,
        posId: d.pos_id,
        keyFingerprint: d.key_fingerprint,
        processingTimeMs: d.processing_time_ms,
        outcome: d.outcome,
        bodySha256: d.body_sha256.toString('hex'),
      })),
    repeatedDeliveries: repeatedOf(repeats.find((x) => x.notification_id === r.id)),
    ...(showBodies ? { body: maskedBody(bodies.find((b) => b.id === r.id)?.body ?? null) } : {}),
  }));
}

function repeatedOf(
  row: { deliveries: string; first_at: Date; last_at: Date } | undefined,
): NotificationView['repeatedDeliveries'] {
  return row ? { count: Number(row.deliveries), firstAt: iso(row.first_at), lastAt: iso(row.last_at) } : null;
}

async function eventsOf(db: Db, orderId: string, refundId?: string): Promise<EventView[]> {
  let query = db.selectFrom('outbox_events').selectAll().where('order_id', '=', orderId).orderBy('sequence');
  if (refundId !== undefined) query = query.where(sql<string>`message::jsonb -> 'data' ->> 'refundId'`, '=', refundId);
  const rows = await query.execute();
  return rows.map((r) => {
    let data: { status?: string; previousStatus?: string | null; notificationId?: string; refundId?: string } = {};
    try {
      data = (JSON.parse(r.message) as { data?: typeof data }).data ?? {};
    } catch {
      // A message is always JSON (writeEvent.ts); show the row anyway.
    }
    return {
      id: r.id,
      sequence: Number(r.sequence),
      type: r.type,
      refundId: data.refundId ?? null,
      status: data.status ?? null,
      previousStatus: data.previousStatus ?? null,
      notificationId: data.notificationId ?? null,
      createdAt: iso(r.created_at),
      published: r.published_at !== null,
      publishedAt: iso(r.published_at),
      unroutedAt: iso(r.unrouted_at),
      attempts: r.attempts,
      nextAttemptAt:
        r.next_attempt_at && Number.isFinite(new Date(r.next_attempt_at).getTime()) ? iso(r.next_attempt_at) : null,
      lastError: r.last_error,
    };
  });
}

function projectionOf<T extends Record<string, unknown>>(row: T | undefined): Record<string, unknown> | null {
  if (!row) return null;
  const view: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    const key = column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    view[key] = value instanceof Date ? value.toISOString() : value;
  }
  return view;
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
          d.observedVia === 'reconciliation' ? 'from reconciliation' : `from ${d.sourceAddress ?? '?'}`,
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
    const [order, refunds, notifications, events] = await Promise.all([
      db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst(),
      db.selectFrom('refunds').selectAll().where('order_id', '=', orderId).orderBy('created_at').execute(),
      notificationsWhere(db, { orderId }, options.showBodies === true),
      eventsOf(db, orderId),
    ]);
    if (!order && notifications.length === 0) {
      io.stderr.write(`no order ${orderId}: no projection and no notification\n`);
      return EXIT_FAILURE;
    }
    const result = {
      kind: 'order',
      orderId,
      projection: projectionOf(order),
      refunds: refunds.map((r) => projectionOf(r)),
      notifications,
      events,
    };
    emit(io, options.json === true, result, () => [
      ...projectionLines(`Order ${orderId}`, result.projection),
      ...(refunds.length > 0
        ? [
            'Refunds:',
            ...refunds.map((r) => `  ${r.refund_id}  ${r.status}  ${r.amount ?? '-'} ${r.currency_code ?? ''}`),
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

export async function inspectRefund(io: CliIo, refundId: string, options: InspectOptions): Promise<ExitCode> {
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  return withDatabase(io, config, async (db) => {
    const [refund, notifications] = await Promise.all([
      db.selectFrom('refunds').selectAll().where('refund_id', '=', refundId).executeTakeFirst(),
      notificationsWhere(db, { refundId }, options.showBodies === true),
    ]);
    if (!refund && notifications.length === 0) {
      io.stderr.write(`no refund ${refundId}: no projection and no notification\n`);
      return EXIT_FAILURE;
    }
    const orderId = refund?.order_id ?? null;
    const events = orderId === null ? [] : await eventsOf(db, orderId, refundId);
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
        'Svc-Processing-Time, outcome) and the outbox events with whether each was published. Raw bodies and buyer ' +
        'data are never shown unless --show-bodies (which still masks the buyer and customer IP).\n\n' +
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
      .option('--show-bodies', 'also print the stored bodies, buyer data and customer IP masked');
    withJson(withDatabaseUrl(command)).action(
      action(state, (id: string, options: InspectOptions) => run(io, id, options)),
    );
  }
}
