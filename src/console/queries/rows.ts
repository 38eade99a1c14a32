import { sql, type Selectable } from 'kysely';
import type { ConsoleAuditTable, DeliveriesTable, ObservedVia } from '../../database/schema';
import type { DeliveryOutcome } from '../../domain/outcomes';

/**
 * What the console reads (this folder, a file per page: order.ts, lists.ts, attention.ts, overview.ts). Every query
 * goes through an index and is bounded (a LIMIT, a keyset cursor, a partition range); none counts over history.
 * History rows are found through the statuses each projection recorded (their notification's id and day), so only
 * those days' partitions are read. This file: the rows more than one page shows, and what they share.
 */

/** What a delivery row of the console shows: the order page's and the recent deliveries' alike. */
export const DELIVERY_COLUMNS = [
  'd.id',
  'd.received_at',
  sql<string | null>`host(d.source_address)`.as('source_address'),
  'd.pos_id',
  'd.key_fingerprint',
  'd.outcome',
  'd.observed_via',
  'd.notification_id',
  'd.quarantine_id',
  'd.notification_received_at',
] as const;

/** Rows a list shows at once. */
export const PAGE_SIZE = 50;

export interface DeliveryRow {
  id: string;
  receivedAt: Date;
  sourceAddress: string | null;
  posId: string;
  keyFingerprint: string;
  outcome: DeliveryOutcome;
  observedVia: ObservedVia;
  notificationId: string | null;
  quarantineId: string | null;
  /** Its notification's receive time: the day it lives in. */
  notificationReceivedAt: Date;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  role: 'viewer' | 'operator' | null;
  action: string;
  target: string | null;
  orderId: string | null;
  result: string;
  detail: string;
}

/**
 * How long before a delivery its notification may have been first received (the partition it lives in): the
 * sender retries for 72 hours; a day more for slack. A repeat later than that is not listed.
 */
export const DELIVERY_AFTER_FIRST_MS = 4 * 86_400_000;

/** The day (UTC, YYYY-MM-DD) a time falls on: a history partition's. */
export const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

/** A deliveries row as DELIVERY_COLUMNS select it. */
type SelectedDelivery = Pick<
  Selectable<DeliveriesTable>,
  | 'id'
  | 'received_at'
  | 'source_address'
  | 'pos_id'
  | 'key_fingerprint'
  | 'outcome'
  | 'observed_via'
  | 'notification_id'
  | 'quarantine_id'
  | 'notification_received_at'
>;

export function deliveryFromRow(d: SelectedDelivery): DeliveryRow {
  return {
    id: d.id,
    receivedAt: d.received_at,
    sourceAddress: d.source_address,
    posId: d.pos_id,
    keyFingerprint: d.key_fingerprint,
    outcome: d.outcome,
    observedVia: d.observed_via,
    notificationId: d.notification_id,
    quarantineId: d.quarantine_id,
    notificationReceivedAt: d.notification_received_at,
  };
}

export const auditFromRow = (a: Selectable<ConsoleAuditTable>): AuditRow => ({
  id: a.id,
  at: a.at,
  actor: a.actor,
  role: a.role,
  action: a.action,
  target: a.target,
  orderId: a.order_id,
  result: a.result,
  detail: a.detail,
});
