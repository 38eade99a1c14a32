import type { Pool, PoolClient } from 'pg';
import type { PaymentEvent } from './paymentEvents';

/**
 * The consumer's own state, in its own Postgres: what a fulfilment or finance team keeps. Each event is applied in
 * one transaction with the record that it was (processed_events, by event id), so a redelivered event changes
 * nothing; the caller acks the message only after the commit.
 *
 * - Forward only, by status rank: an older status arriving late (a redelivery, a replay, another order's events
 *   between) never moves an order or a refund back. Both final statuses rank the same: the first one kept wins, as
 *   in the service.
 * - Held: an event carrying `data.disagreements` (the payment service stated another amount, currency, POS...) or
 *   a status conflict (COMPLETED and CANCELED both notified) puts its order or refund on hold, for good: do not ship
 *   or pay out until a person has looked. A later event never releases it.
 * - Nothing depends on `data.sequence` being without gaps: a consumer of some types sees gaps all the time.
 */

export const SCHEMA = `
  CREATE TABLE IF NOT EXISTS processed_events (
    id            uuid        PRIMARY KEY,
    type          text        NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS payments (
    order_id       text    PRIMARY KEY,
    status         text    NOT NULL,
    status_rank    integer NOT NULL,
    total_amount   text,
    currency_code  text,
    on_hold        boolean NOT NULL DEFAULT false,
    hold_reason    text,
    updated_at     timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS refunds (
    refund_id      text    PRIMARY KEY,
    order_id       text    NOT NULL,
    status         text    NOT NULL,
    status_rank    integer NOT NULL,
    amount         text,
    currency_code  text,
    on_hold        boolean NOT NULL DEFAULT false,
    hold_reason    text,
    updated_at     timestamptz NOT NULL DEFAULT now()
  );`;

const ORDER_RANK: Record<string, number> = { PENDING: 1, WAITING_FOR_CONFIRMATION: 2, COMPLETED: 3, CANCELED: 3 };
const REFUND_RANK: Record<string, number> = { PENDING: 1, FINALIZED: 2, CANCELED: 2 };

export type Applied = 'applied' | 'duplicate';

export async function createSchema(pool: Pool): Promise<void> {
  await pool.query(SCHEMA);
}

/** Applies one event and records it, in one transaction; 'duplicate' when its id was processed before. */
export async function applyEvent(pool: Pool, event: PaymentEvent): Promise<Applied> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const first = await client.query('INSERT INTO processed_events (id, type) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      event.id,
      event.type,
    ]);
    if (first.rowCount === 0) {
      await client.query('ROLLBACK');
      return 'duplicate';
    }
    await apply(client, event);
    await client.query('COMMIT');
    return 'applied';
  } catch (error) {
    broken = error instanceof Error ? error : new Error(String(error));
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release(broken);
  }
}

type OrderEvent = Extract<PaymentEvent, { type: `order.${string}` }>;
type RefundEvent = Extract<PaymentEvent, { type: `refund.${string}` }>;

async function apply(client: PoolClient, event: PaymentEvent): Promise<void> {
  switch (event.type) {
    case 'order.pending':
    case 'order.waiting_for_confirmation':
    case 'order.completed':
    case 'order.canceled':
    case 'order.status_conflict':
      return applyOrder(client, event);
    default:
      return applyRefund(client, event);
  }
}

/** Why an event holds its order or refund: a status conflict, or facts stated otherwise; null when it does not. */
function holdReason(event: OrderEvent | RefundEvent): string | null {
  const { data } = event;
  if (event.type.endsWith('.status_conflict'))
    return `status conflict: ${data.status} notified after ${data.previousStatus ?? '?'}`;
  if (data.disagreements)
    return `disagreements: ${data.disagreements.map((d) => `${d.field} ${d.received} (kept ${d.kept})`).join(', ')}`;
  return null;
}

async function applyOrder(client: PoolClient, event: OrderEvent): Promise<void> {
  const { data } = event;
  // A conflict keeps the final status the order had (previousStatus).
  const status = event.type === 'order.status_conflict' ? (data.previousStatus ?? data.status) : data.status;
  const hold = holdReason(event);
  await client.query(
    `INSERT INTO payments (order_id, status, status_rank, total_amount, currency_code, on_hold, hold_reason)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (order_id) DO UPDATE SET
       status = CASE WHEN excluded.status_rank > payments.status_rank THEN excluded.status ELSE payments.status END,
       status_rank = greatest(payments.status_rank, excluded.status_rank),
       total_amount = coalesce(payments.total_amount, excluded.total_amount),
       currency_code = coalesce(payments.currency_code, excluded.currency_code),
       on_hold = payments.on_hold OR excluded.on_hold,
       hold_reason = coalesce(payments.hold_reason, excluded.hold_reason),
       updated_at = now()`,
    [data.orderId, status, ORDER_RANK[status] ?? 0, data.totalAmount, data.currencyCode, hold !== null, hold],
  );
}

async function applyRefund(client: PoolClient, event: RefundEvent): Promise<void> {
  const { data } = event;
  const status = event.type === 'refund.status_conflict' ? (data.previousStatus ?? data.status) : data.status;
  const hold = holdReason(event);
  await client.query(
    `INSERT INTO refunds (refund_id, order_id, status, status_rank, amount, currency_code, on_hold, hold_reason)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (refund_id) DO UPDATE SET
       status = CASE WHEN excluded.status_rank > refunds.status_rank THEN excluded.status ELSE refunds.status END,
       status_rank = greatest(refunds.status_rank, excluded.status_rank),
       amount = coalesce(refunds.amount, excluded.amount),
       currency_code = coalesce(refunds.currency_code, excluded.currency_code),
       on_hold = refunds.on_hold OR excluded.on_hold,
       hold_reason = coalesce(refunds.hold_reason, excluded.hold_reason),
       updated_at = now()`,
    [
      data.refundId,
      data.orderId,
      status,
      REFUND_RANK[status] ?? 0,
      data.amount,
      data.currencyCode,
      hold !== null,
      hold,
    ],
  );
}
