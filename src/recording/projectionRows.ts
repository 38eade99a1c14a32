import type { Selectable } from 'kysely';
import type { OrderProjection, RefundProjection } from './projection';
import { orderRank, refundRank } from './projection';
import type { OrdersTable, RefundsTable } from '../database/schema';

/**
 * The projections as table rows and back: one place for the column names, used by the recorder,
 * the admin API and `reproject`. Ranks are derived from the status (statusRules.ts).
 */

/** A projection's columns as read (amounts as text): without its timestamps, recorded statuses and revision. */
export type OrderRow = Omit<Selectable<OrdersTable>, 'created_at' | 'updated_at' | 'recorded' | 'revision'>;
export type RefundRow = Omit<Selectable<RefundsTable>, 'created_at' | 'updated_at' | 'recorded' | 'revision'>;

export function orderFromRow(r: Omit<OrderRow, 'status_rank'>): OrderProjection {
  return {
    orderId: r.order_id,
    extOrderId: r.ext_order_id,
    merchantPosId: r.merchant_pos_id,
    status: r.status as OrderProjection['status'],
    totalAmount: r.total_amount,
    currencyCode: r.currency_code,
    paymentId: r.payment_id,
    payMethodType: r.pay_method_type,
    localReceiptDateTime: r.local_receipt_date_time,
  };
}

export function orderToRow(p: OrderProjection): OrderRow {
  return {
    order_id: p.orderId,
    ext_order_id: p.extOrderId,
    merchant_pos_id: p.merchantPosId,
    status: p.status,
    status_rank: orderRank(p),
    total_amount: p.totalAmount,
    currency_code: p.currencyCode,
    payment_id: p.paymentId,
    pay_method_type: p.payMethodType,
    local_receipt_date_time: p.localReceiptDateTime,
  };
}

export function refundFromRow(r: Omit<RefundRow, 'status_rank'>): RefundProjection {
  return {
    refundId: r.refund_id,
    orderId: r.order_id,
    extOrderId: r.ext_order_id,
    extRefundId: r.ext_refund_id,
    status: r.status as RefundProjection['status'],
    amount: r.amount,
    currencyCode: r.currency_code,
    statusDateTime: r.status_date_time,
    refundDate: r.refund_date,
    reason: r.reason,
    reasonDescription: r.reason_description,
  };
}

export function refundToRow(p: RefundProjection): RefundRow {
  return {
    refund_id: p.refundId,
    order_id: p.orderId,
    ext_order_id: p.extOrderId,
    ext_refund_id: p.extRefundId,
    status: p.status,
    status_rank: refundRank(p),
    amount: p.amount,
    currency_code: p.currencyCode,
    status_date_time: p.statusDateTime,
    refund_date: p.refundDate,
    reason: p.reason,
    reason_description: p.reasonDescription,
  };
}
