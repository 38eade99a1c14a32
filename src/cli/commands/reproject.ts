import { sql, type Kysely } from 'kysely';
import type { Command } from 'commander';
import { ORDER_STATUSES, REFUND_STATUSES, type Notification } from '../../parsing/notification';
import type { Db } from '../../database/pool';
import type { Database, RecordedStatuses } from '../../database/schema';
import { applyOrder, applyRefund, type OrderProjection, type RefundProjection } from '../../recording/projection';
import { orderToRow, refundToRow, type OrderRow, type RefundRow } from '../../recording/projectionRows';
import { readConfig, withDatabase } from './database';
import { action, CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { withDatabaseUrl, withJson } from './options';
import { emit, startProgress, type Progress } from './output';

const ORDER_COLUMNS = [
  'ext_order_id',
  'merchant_pos_id',
  'status',
  'status_rank',
  'total_amount',
  'currency_code',
  'payment_id',
  'pay_method_type',
  'local_receipt_date_time',
] as const satisfies ReadonlyArray<keyof OrderRow>;

const REFUND_COLUMNS = [
  'order_id',
  'ext_order_id',
  'ext_refund_id',
  'status',
  'status_rank',
  'amount',
  'currency_code',
  'status_date_time',
  'refund_date',
  'reason',
  'reason_description',
] as const satisfies ReadonlyArray<keyof RefundRow>;

const ORDER_FIELDS = [
  'extOrderId',
  'merchantPosId',
  'totalAmount',
  'currencyCode',
  'paymentId',
  'payMethodType',
  'localReceiptDateTime',
] as const;
const REFUND_FIELDS = [
  'extOrderId',
  'extRefundId',
  'amount',
  'currencyCode',
  'statusDateTime',
  'refundDate',
  'reason',
  'reasonDescription',
] as const;

/** The stored `parsed` column read back as a notification, checked field by field; null if it is not one. */
export function notificationFromParsed(parsed: unknown): Notification | null {
  if (typeof parsed !== 'object' || parsed === null) return null;
  const p = parsed as Record<string, unknown>;
  const isText = (name: string): boolean => typeof p[name] === 'string';
  const isTextOrNull = (name: string): boolean => p[name] === null || p[name] === undefined || isText(name);
  const text = (name: string): string | null => (typeof p[name] === 'string' ? p[name] : null);
  if (p.kind === 'order') {
    const status = ORDER_STATUSES.find((s) => s === p.status);
    if (!status || !isText('orderId') || !ORDER_FIELDS.every(isTextOrNull)) return null;
    return {
      kind: 'order',
      orderId: p.orderId as string,
      status,
      extOrderId: text('extOrderId'),
      merchantPosId: text('merchantPosId'),
      totalAmount: text('totalAmount'),
      currencyCode: text('currencyCode'),
      paymentId: text('paymentId'),
      payMethodType: text('payMethodType'),
      localReceiptDateTime: text('localReceiptDateTime'),
    };
  }
  if (p.kind === 'refund') {
    const status = REFUND_STATUSES.find((s) => s === p.status);
    if (!status || !isText('orderId') || !isText('refundId') || !REFUND_FIELDS.every(isTextOrNull)) return null;
    return {
      kind: 'refund',
      orderId: p.orderId as string,
      refundId: p.refundId as string,
      status,
      extOrderId: text('extOrderId'),
      extRefundId: text('extRefundId'),
      amount: text('amount'),
      currencyCode: text('currencyCode'),
      statusDateTime: text('statusDateTime'),
      refundDate: text('refundDate'),
      reason: text('reason'),
      reasonDescription: text('reasonDescription'),
    };
  }
  return null;
}

export interface FieldDifference {
  column: string;
  stored: string | number | null;
  rebuilt: string | number | null;
}

export interface ProjectionDifference {
  table: 'orders' | 'refunds';
  id: string;
  /** missing: rebuilt but not stored; extra: stored but no notification supports it; different: fields differ. */
  change: 'missing' | 'extra' | 'different';
  fields: FieldDifference[];
}

export interface Reprojection {
  notifications: number;
  orders: Map<string, OrderRow>;
  refunds: Map<string, RefundRow>;
  /** The statuses each rebuilt projection recorded (for a projection that was missing). */
  recorded: { orders: Map<string, RecordedStatuses>; refunds: Map<string, RecordedStatuses> };
  /** The notifications history still holds, by id. */
  seen: Set<string>;
  /** Rows of `parsed` that are not a notification: nothing is applied while there are any. */
  unreadable: string[];
}

/** A status recorded for a subject, as a projection's `recorded` keeps it. */
function record(into: Map<string, RecordedStatuses>, subject: string, status: string, id: string, at: string): void {
  into.set(subject, { ...into.get(subject), [status]: { id, at } });
}

const BATCH = 5000;

/** Folds every stored notification, in arrival order (notifications.id), into fresh projections. */
export async function rebuildProjections(db: Kysely<Database>, progress: Progress): Promise<Reprojection> {
  const result: Reprojection = {
    notifications: 0,
    orders: new Map(),
    refunds: new Map(),
    recorded: { orders: new Map(), refunds: new Map() },
    seen: new Set(),
    unreadable: [],
  };
  // The same pure rules the recorder applies (projection.ts), folded over the notifications.
  const orders = new Map<string, OrderProjection>();
  const refunds = new Map<string, RefundProjection>();
  // The POS each order belongs to never changes once bound; the projection's merchantPosId is it.
  const owners = new Map(
    (await db.selectFrom('order_owners').select(['order_id', 'pos_id']).execute()).map((o) => [o.order_id, o.pos_id]),
  );
  let lastId = '0';
  for (;;) {
    const rows = await db
      .selectFrom('notifications')
      .select(['id', 'parsed', 'pos_id'])
      // As text: a Date would drop the microseconds the projections' recorded statuses keep.
      .select(sql<string>`to_json(received_at)#>>'{}'`.as('at'))
      .where('id', '>', lastId)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      result.seen.add(row.id);
      const n = notificationFromParsed(row.parsed);
      if (!n) {
        result.unreadable.push(row.id);
        continue;
      }
      if (n.kind === 'order') {
        const owner = owners.get(n.orderId) ?? n.merchantPosId ?? row.pos_id;
        orders.set(n.orderId, applyOrder(orders.get(n.orderId), n, owner).projection);
        record(result.recorded.orders, n.orderId, n.status, row.id, row.at);
      } else {
        refunds.set(n.refundId, applyRefund(refunds.get(n.refundId), n).projection);
        record(result.recorded.refunds, n.refundId, n.status, row.id, row.at);
      }
    }
    result.notifications += rows.length;
    progress.increment(rows.length);
    if (rows.length < BATCH) {
      for (const [id, p] of orders) result.orders.set(id, orderToRow(p));
      for (const [id, p] of refunds) result.refunds.set(id, refundToRow(p));
      return result;
    }
    lastId = (rows[rows.length - 1] as { id: string }).id;
  }
}

const comparable = (value: unknown): string | number | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'number' || typeof value === 'string'
      ? value
      : value instanceof Date
        ? value.toISOString()
        : JSON.stringify(value);

function compareRows<Row extends object>(
  table: 'orders' | 'refunds',
  columns: readonly (keyof Row & string)[],
  stored: Map<string, Row>,
  rebuilt: Map<string, Row>,
): ProjectionDifference[] {
  const differences: ProjectionDifference[] = [];
  for (const [id, row] of rebuilt) {
    const current = stored.get(id);
    if (!current) {
      differences.push({
        table,
        id,
        change: 'missing',
        fields: columns.map((c) => ({ column: c, stored: null, rebuilt: comparable(row[c]) })),
      });
      continue;
    }
    const fields = columns
      .map((c) => ({ column: c, stored: comparable(current[c]), rebuilt: comparable(row[c]) }))
      .filter((f) => f.stored !== f.rebuilt);
    if (fields.length > 0) differences.push({ table, id, change: 'different', fields });
  }
  for (const [id, row] of stored) {
    if (!rebuilt.has(id))
      differences.push({
        table,
        id,
        change: 'extra',
        fields: columns.map((c) => ({ column: c, stored: comparable(row[c]), rebuilt: null })),
      });
  }
  return differences.sort((a, b) => a.table.localeCompare(b.table) || a.id.localeCompare(b.id));
}

interface StoredProjections {
  orders: Map<string, OrderRow>;
  refunds: Map<string, RefundRow>;
  /** Projections some of whose recorded statuses history retention removed: not rebuilt (their history is partial). */
  partial: { orders: Set<string>; refunds: Set<string> };
}

async function storedProjections(db: Kysely<Database>, seen: ReadonlySet<string>): Promise<StoredProjections> {
  const [orders, refunds] = await Promise.all([
    db
      .selectFrom('orders')
      .select(['order_id', 'recorded', ...ORDER_COLUMNS])
      .execute(),
    db
      .selectFrom('refunds')
      .select(['refund_id', 'recorded', ...REFUND_COLUMNS])
      .execute(),
  ]);
  const partial = (recorded: RecordedStatuses) => Object.values(recorded).some((entry) => !seen.has(entry.id));
  return {
    orders: new Map(orders.map(({ recorded: _, ...o }) => [o.order_id, { ...o, status_rank: Number(o.status_rank) }])),
    refunds: new Map(
      refunds.map(({ recorded: _, ...r }) => [r.refund_id, { ...r, status_rank: Number(r.status_rank) }]),
    ),
    partial: {
      orders: new Set(orders.filter((o) => partial(o.recorded)).map((o) => o.order_id)),
      refunds: new Set(refunds.filter((r) => partial(r.recorded)).map((r) => r.refund_id)),
    },
  };
}

/** The rows of a map but those named. */
const without = <Row>(rows: Map<string, Row>, left: ReadonlySet<string>): Map<string, Row> =>
  new Map([...rows].filter(([id]) => !left.has(id)));

export interface ReprojectResult {
  notifications: number;
  stored: { orders: number; refunds: number };
  rebuilt: { orders: number; refunds: number };
  /** Projections left as they are: history retention removed part of what they were built from. */
  partialHistory: { orders: number; refunds: number };
  differences: ProjectionDifference[];
}

async function compute(
  db: Kysely<Database>,
  progress: Progress,
): Promise<{ report: ReprojectResult; rebuilt: Reprojection }> {
  const rebuilt = await rebuildProjections(db, progress);
  if (rebuilt.unreadable.length > 0) {
    throw new CliError(
      `${rebuilt.unreadable.length} stored notification(s) have a parsed column that is not a notification ` +
        `(ids ${rebuilt.unreadable.slice(0, 10).join(', ')}${rebuilt.unreadable.length > 10 ? ', ...' : ''}); nothing was compared or changed`,
    );
  }
  const stored = await storedProjections(db, rebuilt.seen);
  const { partial } = stored;
  const report: ReprojectResult = {
    notifications: rebuilt.notifications,
    stored: { orders: stored.orders.size, refunds: stored.refunds.size },
    rebuilt: { orders: rebuilt.orders.size, refunds: rebuilt.refunds.size },
    partialHistory: { orders: partial.orders.size, refunds: partial.refunds.size },
    differences: [
      ...compareRows<OrderRow>(
        'orders',
        ORDER_COLUMNS,
        without(stored.orders, partial.orders),
        without(rebuilt.orders, partial.orders),
      ),
      ...compareRows<RefundRow>(
        'refunds',
        REFUND_COLUMNS,
        without(stored.refunds, partial.refunds),
        without(rebuilt.refunds, partial.refunds),
      ),
    ],
  };
  return { report, rebuilt };
}

/** Makes the stored projections equal the rebuilt ones, touching only the rows that differ. */
async function repair(db: Kysely<Database>, differences: ProjectionDifference[], rebuilt: Reprojection): Promise<void> {
  for (const d of differences) {
    if (d.change === 'extra') {
      if (d.table === 'orders') await db.deleteFrom('orders').where('order_id', '=', d.id).execute();
      else await db.deleteFrom('refunds').where('refund_id', '=', d.id).execute();
      continue;
    }
    // A missing projection gets the statuses it was rebuilt from, for dedup; a stored one keeps its own.
    if (d.table === 'orders') {
      const row = rebuilt.orders.get(d.id) as OrderRow;
      await db
        .insertInto('orders')
        .values({ ...row, recorded: rebuilt.recorded.orders.get(d.id) ?? {} })
        .onConflict((oc) => oc.column('order_id').doUpdateSet({ ...row, updated_at: sql`now()` }))
        .execute();
    } else {
      const row = rebuilt.refunds.get(d.id) as RefundRow;
      await db
        .insertInto('refunds')
        .values({ ...row, recorded: rebuilt.recorded.refunds.get(d.id) ?? {} })
        .onConflict((oc) => oc.column('refund_id').doUpdateSet({ ...row, updated_at: sql`now()` }))
        .execute();
    }
  }
}

function differenceLine(d: ProjectionDifference): string {
  const what = d.table === 'orders' ? 'order' : 'refund';
  if (d.change === 'missing')
    return `  ${what} ${d.id}: missing from the projection; rebuilt as ${d.fields.find((f) => f.column === 'status')?.rebuilt ?? '?'}`;
  if (d.change === 'extra')
    return `  ${what} ${d.id}: in the projection (${d.fields.find((f) => f.column === 'status')?.stored ?? '?'}) but no notification supports it`;
  return `  ${what} ${d.id}: ${d.fields.map((f) => `${f.column} ${f.stored ?? 'null'} -> ${f.rebuilt ?? 'null'}`).join('; ')}`;
}

interface ReprojectOptions {
  dryRun?: boolean;
  apply?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

export async function reproject(io: CliIo, options: ReprojectOptions): Promise<ExitCode> {
  if (options.dryRun && options.apply) throw new UsageError('--dry-run and --apply exclude each other');
  const apply = options.apply === true;
  const json = options.json === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const report = await withDatabase(io, config, async (db: Db): Promise<ReprojectResult> => {
    const total = await db
      .selectFrom('notifications')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    const progress = startProgress(io, json, 'notifications', Number(total.n));
    try {
      if (!apply) return (await compute(db, progress)).report;
      // Writers wait while the projections are rebuilt from what is committed now; a notification
      // recorded after the lock applies on top of the repaired projection through the usual rules.
      return await db.transaction().execute(async (trx) => {
        await sql`LOCK TABLE orders, refunds IN EXCLUSIVE MODE`.execute(trx);
        const { report: found, rebuilt } = await compute(trx, progress);
        await repair(trx, found.differences, rebuilt);
        return found;
      });
    } finally {
      progress.stop();
    }
  });
  const differences = report.differences;
  emit(io, json, { applied: apply, ...report }, () => [
    `Rebuilt from ${report.notifications} notification(s): ${report.rebuilt.orders} order(s), ${report.rebuilt.refunds} refund(s); ` +
      `stored: ${report.stored.orders} order(s), ${report.stored.refunds} refund(s).`,
    ...(report.partialHistory.orders + report.partialHistory.refunds > 0
      ? [
          `Left as they are: ${report.partialHistory.orders} order(s) and ${report.partialHistory.refunds} refund(s) ` +
            'whose history retention removed in part (HISTORY_RETENTION).',
        ]
      : []),
    ...(differences.length === 0
      ? ['No differences: the projections equal what the notifications imply.']
      : [`${differences.length} difference(s) (stored -> rebuilt):`, ...differences.map(differenceLine)]),
    ...(differences.length > 0
      ? [
          apply
            ? `Repaired ${differences.length} row(s) in one transaction.`
            : 'Dry run: nothing changed. Run with --apply to repair.',
        ]
      : []),
  ]);
  return differences.length > 0 && !apply ? EXIT_FAILURE : EXIT_OK;
}

export function registerReproject(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('reproject')
    .summary('rebuild the order and refund projections from the stored notifications')
    .description(
      'Rebuilds the order and refund projections from the stored notifications (their parsed fields, in arrival ' +
        'order) with the same status rules and field merging as live recording, and compares them with the stored ' +
        'projections. By default (--dry-run) it only shows the differences; --apply repairs exactly the rows that ' +
        'differ (inserts missing ones, deletes ones no notification supports) in one transaction, during which ' +
        'recording waits. Timestamps (created_at, updated_at) are not compared. A projection whose history retention ' +
        'removed in part is left as it is.\n\n' +
        'Exit codes: 0 no differences (or, with --apply, repaired); 1 differences found (dry run) or stored data ' +
        'that cannot be read; 2 usage error.',
    )
    .option('--dry-run', 'show the differences, change nothing (the default)')
    .option('--apply', 'repair the differences in one transaction');
  withJson(withDatabaseUrl(command)).action(action(state, (options: ReprojectOptions) => reproject(io, options)));
}
