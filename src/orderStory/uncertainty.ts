import type { RecordedStatuses } from '../database/schema';
import type { OrderStory, StoryNotification } from './orderStoryQueries';

/**
 * What is uncertain about an order (pure): a contradiction, an order both COMPLETED and CANCELED or a refund both
 * FINALIZED and CANCELED. The projection keeps the first final status (the status rules, src/recording/
 * statusRules.ts); the later one is recorded as a conflict. Neither can be trusted until the payment service is
 * asked: such an item is HELD — book nothing, reverse nothing, until reconciled. The console's order page and the
 * admin API's order and refund read it here, so they say the same thing.
 */

export interface ContradictedStatus {
  status: string;
  /** When the first notification (or check) of this status was recorded. */
  at: Date;
}

export interface Contradiction {
  kind: StoryNotification['kind'];
  subjectId: string;
  /** The two final statuses, in the order they came. */
  first: ContradictedStatus;
  second: ContradictedStatus;
  /** What the money may have done, in words (times as `when` writes them). */
  money: string;
  /** What to do. */
  toDo: string;
}

/** The pairs of final statuses that contradict each other. */
const CONTRADICTORY = { order: ['COMPLETED', 'CANCELED'], refund: ['FINALIZED', 'CANCELED'] } as const;

export const HOLD_RULE = 'Held: book nothing and reverse nothing until it is reconciled with the payment service.';

/**
 * The two contradictory final statuses an order's or refund's projection recorded, in the order they came, or null.
 * Read from the projection's `recorded` (what dedup keeps, which retention never removes): what a list or a search
 * result can say without reading the notifications.
 */
export function recordedContradiction(
  kind: StoryNotification['kind'],
  recorded: RecordedStatuses,
): [ContradictedStatus, ContradictedStatus] | null {
  const [a, b] = CONTRADICTORY[kind];
  const seenA = recorded[a];
  const seenB = recorded[b];
  if (seenA === undefined || seenB === undefined) return null;
  const first = { status: a, at: new Date(seenA.at) };
  const second = { status: b, at: new Date(seenB.at) };
  return first.at.getTime() <= second.at.getTime() ? [first, second] : [second, first];
}

/** The contradiction of one subject of the story, or null. */
function contradictionOf(
  story: OrderStory,
  kind: StoryNotification['kind'],
  subjectId: string,
  when: (at: Date) => string,
): Contradiction | null {
  const [a, b] = CONTRADICTORY[kind];
  const firstAt = (status: string): Date | undefined =>
    story.notifications
      .filter((n) => n.kind === kind && n.subjectId === subjectId && n.status === status)
      .map((n) => n.receivedAt)
      .sort((x, y) => x.getTime() - y.getTime())[0];
  const atA = firstAt(a);
  const atB = firstAt(b);
  if (atA === undefined || atB === undefined) return null;
  const [first, second] =
    atA.getTime() <= atB.getTime()
      ? [
          { status: a, at: atA },
          { status: b, at: atB },
        ]
      : [
          { status: b, at: atB },
          { status: a, at: atA },
        ];
  const came = `${first.status} came ${when(first.at)}, ${second.status} ${when(second.at)}`;
  const money =
    kind === 'order'
      ? `The money may have been taken, or not: ${came}.`
      : `The money may have gone back to the customer, or not: ${came}.`;
  const path = kind === 'order' ? `POST /orders/${subjectId}/reconcile` : `POST /orders/${story.orderId}/reconcile`;
  return {
    kind,
    subjectId,
    first,
    second,
    money,
    toDo: `${HOLD_RULE} Ask the payment service: the Check button on this page, or ${path} on the admin port; if it still says both, ask the payment service's support.`,
  };
}

/** Every contradiction of the order and its refunds, the order's first. */
export function contradictionsOf(story: OrderStory, when: (at: Date) => string): Contradiction[] {
  return [
    ...(story.order ? [contradictionOf(story, 'order', story.orderId, when)] : []),
    ...story.refunds.map((r) => contradictionOf(story, 'refund', r.refundId, when)),
  ].filter((c): c is Contradiction => c !== null);
}
