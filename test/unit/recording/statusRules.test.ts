import type { StatusTransition } from '../../../src/domain/outcomes';
import { ORDER_STATUSES, REFUND_STATUSES } from '../../../src/parsing/notification';
import {
  decideOrderTransition,
  decideRefundTransition,
  ORDER_STATUS_RANK,
  REFUND_STATUS_RANK,
} from '../../../src/recording/statusRules';

describe('order status rules', () => {
  // Every pair, spelled out: the table is the specification.
  const table: Array<[string | null, string, StatusTransition]> = [
    [null, 'PENDING', 'applied'],
    [null, 'WAITING_FOR_CONFIRMATION', 'applied'],
    [null, 'COMPLETED', 'applied'],
    [null, 'CANCELED', 'applied'],
    ['PENDING', 'PENDING', 'stale'],
    ['PENDING', 'WAITING_FOR_CONFIRMATION', 'applied'],
    ['PENDING', 'COMPLETED', 'applied'],
    ['PENDING', 'CANCELED', 'applied'],
    ['WAITING_FOR_CONFIRMATION', 'PENDING', 'stale'],
    ['WAITING_FOR_CONFIRMATION', 'WAITING_FOR_CONFIRMATION', 'stale'],
    ['WAITING_FOR_CONFIRMATION', 'COMPLETED', 'applied'],
    ['WAITING_FOR_CONFIRMATION', 'CANCELED', 'applied'],
    ['COMPLETED', 'PENDING', 'stale'],
    ['COMPLETED', 'WAITING_FOR_CONFIRMATION', 'stale'],
    ['COMPLETED', 'COMPLETED', 'stale'],
    ['COMPLETED', 'CANCELED', 'conflict'],
    ['CANCELED', 'PENDING', 'stale'],
    ['CANCELED', 'WAITING_FOR_CONFIRMATION', 'stale'],
    ['CANCELED', 'CANCELED', 'stale'],
    ['CANCELED', 'COMPLETED', 'conflict'],
  ];

  it.each(table)('When the order is %s and %s arrives, then it is %s', (current, incoming, outcome) => {
    expect(decideOrderTransition(current as never, incoming as never)).toBe(outcome);
  });

  it('When checked against the ranks the database uses, then "applied" is exactly "rank goes up"', () => {
    for (const current of ORDER_STATUSES) {
      for (const incoming of ORDER_STATUSES) {
        const applied = decideOrderTransition(current, incoming) === 'applied';
        expect(applied).toBe(ORDER_STATUS_RANK[current] < ORDER_STATUS_RANK[incoming]);
      }
    }
  });
});

describe('refund status rules', () => {
  const table: Array<[string | null, string, StatusTransition]> = [
    [null, 'PENDING', 'applied'],
    [null, 'FINALIZED', 'applied'],
    [null, 'CANCELED', 'applied'],
    ['PENDING', 'PENDING', 'stale'],
    ['PENDING', 'FINALIZED', 'applied'],
    ['PENDING', 'CANCELED', 'applied'],
    ['FINALIZED', 'PENDING', 'stale'],
    ['FINALIZED', 'CANCELED', 'conflict'],
    ['CANCELED', 'FINALIZED', 'conflict'],
    ['CANCELED', 'PENDING', 'stale'],
  ];

  it.each(table)('When the refund is %s and %s arrives, then it is %s', (current, incoming, outcome) => {
    expect(decideRefundTransition(current as never, incoming as never)).toBe(outcome);
  });

  it('When checked against the ranks the database uses, then "applied" is exactly "rank goes up"', () => {
    for (const current of REFUND_STATUSES) {
      for (const incoming of REFUND_STATUSES) {
        expect(decideRefundTransition(current, incoming) === 'applied').toBe(
          REFUND_STATUS_RANK[current] < REFUND_STATUS_RANK[incoming],
        );
      }
    }
  });
});
