import { query } from './database';

/**
 * Moves the whole history of some orders (their notifications, variants and deliveries, their refunds' too)
 * `days` days back, into partitions made for those days, and their projections' recorded statuses with it:
 * as if it had been received then. The projections themselves are left as they are.
 */
export async function backdateHistory(url: string, orderIds: readonly string[], days: number): Promise<void> {
  // Rows of today land `days` days back: a day either side covers a run across midnight.
  await query(
    url,
    `SELECT history_partitions_ensure(d - $1::int - 1, d - $1::int + 1) FROM (SELECT (now() AT TIME ZONE 'UTC')::date AS d) t`,
    [days],
  );
  const shift = `make_interval(days => ${Number(days)})`;
  await query(
    url,
    `WITH moved AS (SELECT id FROM notifications WHERE order_id = ANY($1))
     UPDATE deliveries SET received_at = received_at - ${shift}, notification_received_at = notification_received_at - ${shift}
      WHERE notification_id IN (SELECT id FROM moved)`,
    [orderIds],
  );
  await query(
    url,
    `WITH moved AS (SELECT id FROM notifications WHERE order_id = ANY($1))
     UPDATE notification_variants
        SET first_received_at = first_received_at - ${shift},
            notification_received_at = notification_received_at - ${shift}
      WHERE notification_id IN (SELECT id FROM moved)`,
    [orderIds],
  );
  await query(url, `UPDATE notifications SET received_at = received_at - ${shift} WHERE order_id = ANY($1)`, [
    orderIds,
  ]);
  const recorded = (kind: string, key: string) => `
    (SELECT jsonb_object_agg(n.status, jsonb_build_object('id', n.id::text, 'at', n.received_at))
       FROM notifications n WHERE n.kind = '${kind}' AND n.subject_id = ${key})`;
  await query(url, `UPDATE orders SET recorded = ${recorded('order', 'orders.order_id')} WHERE order_id = ANY($1)`, [
    orderIds,
  ]);
  await query(
    url,
    `UPDATE refunds SET recorded = ${recorded('refund', 'refunds.refund_id')} WHERE order_id = ANY($1)`,
    [orderIds],
  );
}

/** The days (YYYYMMDD) each history table has a partition for. */
export async function historyDays(url: string): Promise<Record<string, string[]>> {
  const rows = await query<{ parent: string; day: string }>(
    url,
    `SELECT p.relname AS parent, substring(c.relname from '_p(\\d{8})$') AS day
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname IN ('notifications', 'notification_variants', 'deliveries') AND c.relkind = 'r'
      ORDER BY 1, 2`,
  );
  const days: Record<string, string[]> = { notifications: [], notification_variants: [], deliveries: [] };
  for (const row of rows) days[row.parent]?.push(row.day);
  return days;
}
