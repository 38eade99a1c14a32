import { PooledTransactions } from '../../../src/database/transaction';
import { Recorder, type RecorderOptions } from '../../../src/recording/recorder';
import { query, whileOrderLocked } from '../../support/database';
import { deliveryOf, orderNotification, refundNotification } from '../../support/notifications';
import { startTestService, type TestService } from '../../support/service';
import { uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
});
afterAll(() => svc.stop());

const storeWith = (options: RecorderOptions): Recorder =>
  new Recorder(
    new PooledTransactions(svc.service.pool),
    { eventSource: 'urn:test', paymentServiceTimeZone: 'Europe/Warsaw' },
    options,
  );

describe('group commit', () => {
  it('When notifications queue behind one busy transaction, then they are recorded together and each gets its own outcome', async () => {
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 100, maxWaitMs: 5000, answerWithinMs: 6000 });
    const orderId = uniqueId('GC');
    const others = Array.from({ length: 10 }, () => uniqueId('GCO'));
    const results = await Promise.all([
      store.record(deliveryOf(`${orderId}-p`), orderNotification(orderId, 'PENDING')),
      store.record(deliveryOf(`${orderId}-c`), orderNotification(orderId, 'COMPLETED')),
      store.record(deliveryOf(`${orderId}-c2`), orderNotification(orderId, 'COMPLETED')),
      store.record(deliveryOf(`${orderId}-p2`), orderNotification(orderId, 'PENDING')),
      ...others.map((id) => store.record(deliveryOf(id), orderNotification(id, 'PENDING'))),
    ]);
    expect(results.slice(0, 4).map((r) => [r.outcome, r.outcome !== 'refused' && r.newVariant])).toEqual([
      ['accepted', false],
      ['accepted', false],
      ['duplicate', true],
      ['duplicate', true],
    ]);
    expect(results.slice(4).every((r) => r.outcome === 'accepted')).toBe(true);
    const [row] = await query<{ status: string; last_sequence: string }>(
      svc.database.url,
      'SELECT o.status, s.last_sequence FROM orders o JOIN event_streams s USING (order_id) WHERE order_id = $1',
      [orderId],
    );
    expect(row).toEqual({ status: 'COMPLETED', last_sequence: '2' });
  });

  it('When one notification in a batch breaks a database rule, then only it is quarantined and the others commit', async () => {
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 100, maxWaitMs: 5000, answerWithinMs: 6000 });
    const good = Array.from({ length: 5 }, () => uniqueId('GOOD'));
    const bad = uniqueId('BAD');
    // The parser never lets a negative amount through; the table's CHECK stands in for any defect.
    const results = await Promise.all([
      ...good.slice(0, 2).map((id) => store.record(deliveryOf(id), orderNotification(id, 'PENDING'))),
      store.record(deliveryOf(bad), orderNotification(bad, 'PENDING', { totalAmount: '-1' })),
      ...good.slice(2).map((id) => store.record(deliveryOf(id), orderNotification(id, 'PENDING'))),
    ]);
    // An authentic notification is never answered with an error its retry cannot cure: it is kept instead.
    expect(results.map((r) => r.outcome)).toEqual([
      'accepted',
      'accepted',
      'quarantined',
      'accepted',
      'accepted',
      'accepted',
    ]);
    const [kept] = await query<{ reason: string; detail: string; body: Buffer }>(
      svc.database.url,
      'SELECT reason, detail, body FROM quarantined_notifications WHERE body_sha256 = sha256($1)',
      [Buffer.from(bad)],
    );
    expect(kept).toEqual({
      reason: 'unrecordable',
      detail: 'recording failed (SQLSTATE 23514, orders_total_amount_check)',
      body: Buffer.from(bad),
    });
    const stored = await query<{ order_id: string }>(
      svc.database.url,
      'SELECT order_id FROM orders WHERE order_id = ANY($1)',
      [[...good, bad]],
    );
    expect(stored.map((r) => r.order_id).sort()).toEqual([...good].sort());
  });

  it('When the queue is full, then new notifications are refused at once rather than waiting', async () => {
    const store = storeWith({ maxBatchSize: 1, lanes: 1, maxQueued: 2, maxWaitMs: 5000, answerWithinMs: 6000 });
    const ids = Array.from({ length: 6 }, () => uniqueId('FULL'));
    // Sent together: the first starts the lane's transaction, the next two fill the queue (maxQueued 2), and
    // the last three find it full.
    const settled = await Promise.allSettled(
      ids.map((id) => store.record(deliveryOf(id), orderNotification(id, 'PENDING'))),
    );
    expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).name : s.value.outcome))).toEqual([
      'accepted',
      'accepted',
      'accepted',
      'RecorderOverloaded',
      'RecorderOverloaded',
      'RecorderOverloaded',
    ]);
  });
});

describe('group commit with refunds', () => {
  it('When many refunds of the same orders arrive together with the orders, then every refund is projected', async () => {
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 1000, maxWaitMs: 5000, answerWithinMs: 6000 });
    const orders = Array.from({ length: 20 }, () => uniqueId('RFO'));
    const work: Array<Promise<unknown>> = [];
    for (const orderId of orders) {
      work.push(store.record(deliveryOf(`${orderId}-c`), orderNotification(orderId, 'COMPLETED')));
      for (const k of [1, 2]) {
        const refundId = `${orderId}-R${k}`;
        const n = refundNotification(orderId, refundId, 'FINALIZED');
        work.push(store.record(deliveryOf(refundId), n), store.record(deliveryOf(`${refundId}-again`), n));
      }
    }
    await Promise.all(work);
    const rows = await query<{ n: string }>(
      svc.database.url,
      'SELECT count(*) AS n FROM refunds WHERE order_id = ANY($1)',
      [orders],
    );
    expect(rows[0]?.n).toBe('40');
    const seq = await query<{ order_id: string; last_sequence: string }>(
      svc.database.url,
      'SELECT order_id, last_sequence FROM event_streams WHERE order_id = ANY($1)',
      [orders],
    );
    expect(seq.every((s) => s.last_sequence === '3')).toBe(true);
  });
});

describe('group commit deadlines', () => {
  it('When the answer time passes while its batch is still running, then it is refused and the batch does not commit it', async () => {
    // A slow first statement (lock wait) stands in for a slow database: an open transaction holds
    // the order's advisory lock for longer than the answer time.
    const orderId = uniqueId('SLOW');
    const other = uniqueId('FAST');
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 100, maxWaitMs: 5000, answerWithinMs: 300 });
    await whileOrderLocked(svc.service.pool, orderId, async () => {
      await expect(store.record(deliveryOf(orderId), orderNotification(orderId, 'PENDING'))).rejects.toThrow(
        /no commit within 300 ms/,
      );
    });
    // The lock is released: the batch's statements can finish now, but it must not commit. With one lane,
    // the next notification runs only once that batch has ended: its answer is the event this waits for.
    await expect(store.record(deliveryOf(other), orderNotification(other, 'PENDING'))).resolves.toMatchObject({
      outcome: 'accepted',
    });
    const rows = await query<{ subject_id: string }>(
      svc.database.url,
      'SELECT subject_id FROM notifications WHERE subject_id = ANY($1)',
      [[orderId, other]],
    );
    expect(rows.map((r) => r.subject_id)).toEqual([other]);
  });

  it('When a batch sent its COMMIT but the database does not answer, then the answer still comes by the answer time plus half a second', async () => {
    // The write waits on a row lock (another transaction holds the order's projection row), so the
    // write and the COMMIT sent with it go unanswered, as in a network partition.
    const orderId = uniqueId('HUNG');
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 100, maxWaitMs: 5000, answerWithinMs: 300 });
    await store.record(deliveryOf(`${orderId}-p`), orderNotification(orderId, 'PENDING'));
    const blocker = await svc.service.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM orders WHERE order_id = $1 FOR UPDATE', [orderId]);
      const started = performance.now();
      await expect(store.record(deliveryOf(`${orderId}-c`), orderNotification(orderId, 'COMPLETED'))).rejects.toThrow(
        /timeout/i,
      );
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(700);
      expect(waited).toBeLessThan(1_500);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // The store goes on with fresh connections.
    const next = uniqueId('AFTER');
    await expect(store.record(deliveryOf(next), orderNotification(next, 'PENDING'))).resolves.toMatchObject({
      outcome: 'accepted',
    });
  });

  it('When the service stops with a batch running and others queued, then each is refused at once and none is written', async () => {
    // Answer times far beyond the test's own timeout: only the refusal can answer them in time.
    const store = storeWith({ maxBatchSize: 1, lanes: 1, maxQueued: 100, maxWaitMs: 60_000, answerWithinMs: 60_000 });
    const [running, queued, late] = [uniqueId('STOPR'), uniqueId('STOPQ'), uniqueId('STOPL')];
    await whileOrderLocked(svc.service.pool, running, async () => {
      const answers = [
        store.record(deliveryOf(running), orderNotification(running, 'PENDING')),
        store.record(deliveryOf(queued), orderNotification(queued, 'PENDING')),
      ].map((answer) => answer.catch((error: Error) => error.message));
      await waitUntil('one batch running and one notification queued', () => {
        const { queued: waiting, activeBatches } = store.load;
        return waiting === 1 && activeBatches === 1;
      });
      store.refuseAll();
      expect(await Promise.all(answers)).toEqual(['the service is stopping', 'the service is stopping']);
      await expect(store.record(deliveryOf(late), orderNotification(late, 'PENDING'))).rejects.toThrow(
        'the service is stopping',
      );
    });
    // The lock is gone: the running batch's statements finish, and it must not commit.
    await waitUntil('the running batch has ended', () => store.load.activeBatches === 0);
    const rows = await query<{ subject_id: string }>(
      svc.database.url,
      'SELECT subject_id FROM notifications WHERE subject_id = ANY($1)',
      [[running, queued, late]],
    );
    expect(rows).toEqual([]);
  });

  it('When the service stops while a quarantine waits for the database, then it is refused at once, and later ones too', async () => {
    const store = storeWith({ maxBatchSize: 64, lanes: 1, maxQueued: 100, maxWaitMs: 60_000, answerWithinMs: 60_000 });
    // The quarantine's write waits behind a lock on its table, as behind a database that does not answer.
    const blocker = await svc.service.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE quarantined_notifications IN ACCESS EXCLUSIVE MODE');
      const answer = store
        .quarantine(deliveryOf(uniqueId('STOPQ')), 'not_json', 'test')
        .catch((error: Error) => error.message);
      await waitUntil('the quarantine waits for the lock', async () => {
        const [row] = await query<{ n: string }>(
          svc.database.url,
          `SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE NOT l.granted AND c.relname = 'quarantined_notifications'`,
        );
        return row?.n !== '0';
      });
      store.refuseAll();
      expect(await answer).toBe('the service is stopping');
      await expect(store.quarantine(deliveryOf(uniqueId('STOPL')), 'not_json', 'test')).rejects.toThrow(
        'the service is stopping',
      );
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
  });
});
