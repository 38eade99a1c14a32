import type { Db } from '../database/pool';
import type { Disagreement, ObservedVia } from '../database/schema';
import {
  orderOfRefund,
  readOrderStory,
  type OrderStory,
  type StoryNotification,
  type StoryRefund,
} from '../orderStory/orderStoryQueries';
import { contradictionsOf, type Contradiction } from '../orderStory/uncertainty';
import type { OrderProjection, RefundProjection } from '../recording/projection';

/** The admin API's order and refund (docs/openapi.yaml), from the order's story (src/orderStory/). */

export interface StatusChange {
  status: string;
  /** When the first delivery of this status arrived. */
  receivedAt: string;
  /** Whether this notification moved the projection. */
  applied: boolean;
  outcome: 'applied' | 'stale' | 'conflict';
  /** Every delivery of it, those counted without a row of their own (delivery_repeats) included. */
  deliveries: number;
  /** Facts it stated otherwise than the projection keeps (the projection kept its own values). */
  disagreements: Disagreement[];
  /** How it was first learned: a notification, or reconciliation against the payment API. */
  observedVia: ObservedVia;
}

/**
 * An order both COMPLETED and CANCELED, or a refund both FINALIZED and CANCELED (src/orderStory/uncertainty.ts):
 * its status is not settled, whatever `status` says. Held: book nothing, reverse nothing, until reconciled.
 */
export interface ContradictedView {
  /** The two final statuses, in the order they came. */
  statuses: { status: string; receivedAt: string }[];
  held: true;
  /** What the money may have done. */
  money: string;
  toDo: string;
}

/** A refund as the admin API shows it: the projection, its last change and its status history. */
export interface RefundView extends Omit<RefundProjection, 'status'> {
  status: string;
  updatedAt: string;
  history: StatusChange[];
  /** null: no contradiction. */
  contradicted: ContradictedView | null;
}

/** An order as the admin API shows it, with its refunds. */
export interface OrderView extends Omit<OrderProjection, 'status'> {
  status: string;
  updatedAt: string;
  history: StatusChange[];
  /** null: no contradiction. */
  contradicted: ContradictedView | null;
  refunds: RefundView[];
}

const contradictedView = (c: Contradiction | undefined): ContradictedView | null =>
  c === undefined
    ? null
    : {
        statuses: [c.first, c.second].map((s) => ({ status: s.status, receivedAt: s.at.toISOString() })),
        held: true,
        money: c.money,
        toDo: c.toDo,
      };

const isoTime = (at: Date): string => `at ${at.toISOString()}`;

const contradictionOfSubject = (story: OrderStory, kind: Contradiction['kind'], id: string): ContradictedView | null =>
  contradictedView(contradictionsOf(story, isoTime).find((c) => c.kind === kind && c.subjectId === id));

/** A subject's statuses, in the order they were recorded. */
function statusChangesOf(story: OrderStory, kind: StoryNotification['kind'], subjectId: string): StatusChange[] {
  return story.notifications
    .filter((n) => n.kind === kind && n.subjectId === subjectId)
    .map((n) => ({
      status: n.status,
      receivedAt: n.receivedAt.toISOString(),
      applied: n.outcome === 'applied',
      outcome: n.outcome,
      deliveries: n.deliveries,
      disagreements: n.disagreements,
      observedVia: n.observedVia,
    }));
}

function refundViewOf(story: OrderStory, { createdAt: _created, updatedAt, ...refund }: StoryRefund): RefundView {
  return {
    ...refund,
    updatedAt: updatedAt.toISOString(),
    history: statusChangesOf(story, 'refund', refund.refundId),
    contradicted: contradictionOfSubject(story, 'refund', refund.refundId),
  };
}

/** An order with its refunds and their histories; null when no notification of the order itself was recorded. */
export async function orderView(db: Db, orderId: string): Promise<OrderView | null> {
  const story = await readOrderStory(db, orderId);
  if (!story?.order) return null;
  const { createdAt: _created, updatedAt, ...order } = story.order;
  return {
    ...order,
    updatedAt: updatedAt.toISOString(),
    history: statusChangesOf(story, 'order', orderId),
    contradicted: contradictionOfSubject(story, 'order', orderId),
    refunds: story.refunds.map((refund) => refundViewOf(story, refund)),
  };
}

/** A refund with its history; null when none was recorded. Found through the order it was recorded under. */
export async function refundView(db: Db, refundId: string): Promise<RefundView | null> {
  const orderId = await orderOfRefund(db, refundId);
  const story = orderId === null ? null : await readOrderStory(db, orderId);
  const refund = story?.refunds.find((r) => r.refundId === refundId);
  return story && refund ? refundViewOf(story, refund) : null;
}
