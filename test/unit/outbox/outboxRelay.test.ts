import { afterBatch, RELAY_BATCH_EVERY_MS, waves } from '../../../src/outbox/outboxRelay';

const BATCH = 200;
const POLL = 1000;

describe('afterBatch: what the relay does after a batch', () => {
  it('When a batch found nothing, then it polls, and a commit’s hint ends the wait at once', () => {
    expect(afterBatch(0, BATCH, 3, POLL)).toEqual({ waitMs: POLL, wakeable: true });
  });

  it('When a batch was full (a backlog), then the next one goes at once', () => {
    expect(afterBatch(BATCH, BATCH, 3, POLL)).toEqual({ waitMs: 0, wakeable: true });
  });

  it('When a batch found some events, then the next begins RELAY_BATCH_EVERY_MS after it began, and a hint does not cut that short', () => {
    expect(afterBatch(12, BATCH, 6, POLL)).toEqual({ waitMs: RELAY_BATCH_EVERY_MS - 6, wakeable: false });
  });

  it('When a batch found some events and took longer than RELAY_BATCH_EVERY_MS, then the next goes at once', () => {
    expect(afterBatch(12, BATCH, RELAY_BATCH_EVERY_MS + 5, POLL)).toEqual({ waitMs: 0, wakeable: false });
  });
});

describe('waves: how a batch is published', () => {
  it('When a batch has one event per order, then it is one wave, in the batch’s order', () => {
    const batch = [{ order_id: 'A' }, { order_id: 'B' }, { order_id: 'C' }];
    expect(waves(batch)).toEqual([batch]);
  });

  it('When an order has several events in a batch, then its k-th event is in the k-th wave, in sequence', () => {
    const batch = ['A', 'B', 'A', 'C', 'A', 'B'].map((order_id, i) => ({ order_id, i }));
    const at = (...indexes: number[]) => indexes.map((i) => batch[i]);
    expect(waves(batch)).toEqual([at(0, 1, 3), at(2, 5), at(4)]);
  });

  it('When a batch is empty, then there is no wave', () => {
    expect(waves([])).toEqual([]);
  });
});
