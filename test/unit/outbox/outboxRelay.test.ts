import { afterBatch, RELAY_BATCH_EVERY_MS } from '../../../src/outbox/outboxRelay';

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
