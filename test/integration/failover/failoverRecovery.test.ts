import amqp from 'amqplib';
import pg from 'pg';
import { encodeMessage, type JournalEntry } from '../../../src/failover/journalEntries';
import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator';
import { AMQP_URL, deleteQueue, EventConsumer } from '../../support/broker';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, POS_ID, refundBody, sign, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

/**
 * A failover that lost its last seconds (issue 54), played on one database: the service records notifications
 * (and the journal keeps them), then the database "forgets" what came after a point, as a promoted standby that
 * missed it would, its beat back where it was then. The watch notices the beat gone back, holds the writes, and the
 * recovery restores every lost status from the journal, with the ids it had, and publishes each event again under
 * the id consumers already know. The real thing, with a streaming standby promoted, is the fault scenario
 * test/reliability/scenarios/failover.ts.
 */

let svc: TestService;
let consumer: EventConsumer;

beforeAll(async () => {
  svc = await startTestService({ env: { FAILOVER_RECONCILE_WINDOW: '0' } });
  consumer = await new EventConsumer(svc.exchange).start();
});

afterAll(async () => {
  await consumer.stop();
  await svc.stop();
});

/** The journal has confirmed everything the service gave it. */
async function journalSettled(): Promise<void> {
  await waitUntil('the journal confirmed every entry', async () => {
    const [value] = (await svc.service.metrics.failover.journalBacklog.get()).values;
    return (value?.value ?? 0) === 0;
  });
}

async function accepted(body: string): Promise<void> {
  await svc.post(body).expect(200);
}

interface Lost {
  orderIds: string[];
  refundIds: string[];
}

/**
 * What a promoted standby that stopped receiving WAL at `cut` holds: every row written for these orders and refunds
 * since is gone (new orders wholly, the refunds of an older one), and the beat is back where it was then.
 */
async function forgetSince(cut: Date, lost: Lost): Promise<void> {
  const client = new pg.Client({ connectionString: svc.database.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    const orders = lost.orderIds;
    const refunds = lost.refundIds;
    const subjects = [...orders, ...refunds];
    await client.query(
      `DELETE FROM deliveries d USING notifications n
        WHERE d.notification_id = n.id AND d.notification_received_at = n.received_at
          AND (n.subject_id = ANY($1) OR n.order_id = ANY($2)) AND n.received_at >= $3`,
      [subjects, orders, cut],
    );
    await client.query(
      'DELETE FROM notifications WHERE (subject_id = ANY($1) OR order_id = ANY($2)) AND received_at >= $3',
      [subjects, orders, cut],
    );
    await client.query('DELETE FROM outbox_events WHERE created_at >= $1', [cut]);
    await client.query('DELETE FROM refunds WHERE refund_id = ANY($1)', [refunds]);
    await client.query('DELETE FROM orders WHERE order_id = ANY($1)', [orders]);
    await client.query('DELETE FROM order_owners WHERE order_id = ANY($1)', [orders]);
    await client.query('DELETE FROM event_streams WHERE order_id = ANY($1)', [orders]);
    await client.query('DELETE FROM reconciliation_checks WHERE order_id = ANY($1)', [orders]);
    // The refunds' order keeps its stream as it was: one event fewer per refund forgotten.
    await client.query(
      `UPDATE event_streams s SET last_sequence = (SELECT coalesce(max(sequence), 0) FROM outbox_events o WHERE o.order_id = s.order_id)`,
    );
    await client.query(`UPDATE database_watch SET beat = beat - 1000000, beat_at = $1`, [cut]);
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

describe('When the database fails over and loses what it acknowledged in its last seconds', () => {
  const kept = uniqueId('FOKEPT');
  const lostOrders = [uniqueId('FOLOST'), uniqueId('FOLOST'), uniqueId('FOLOST')];
  const lostRefund = uniqueId('FOREF');
  let originals: Array<{ id: string; type: string; subject: string; data: { notificationId: string } }>;
  let notificationIds: Map<string, string>;

  beforeAll(async () => {
    await accepted(orderBody({ orderId: kept, status: 'PENDING' }));
    await accepted(orderBody({ orderId: kept, status: 'COMPLETED', payMethodType: 'PBL' }));
    await journalSettled();
    await consumer.waitFor(2);
    // A beat or two after the kept ones: the cut comes after them.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const [row] = await query<{ now: Date }>(svc.database.url, 'SELECT now() AS now');
    const cut = row?.now ?? new Date();
    for (const orderId of lostOrders) {
      await accepted(orderBody({ orderId, status: 'PENDING' }));
      await accepted(orderBody({ orderId, status: 'COMPLETED', payMethodType: 'PBL' }));
    }
    await accepted(refundBody({ orderId: kept, refundId: lostRefund, status: 'FINALIZED' }));
    await journalSettled();
    originals = (await consumer.waitFor(2 + 2 * lostOrders.length + 1)).map(
      (m) => JSON.parse(m.content.toString('utf8')) as (typeof originals)[number],
    );
    notificationIds = new Map(
      (
        await query<{ subject_id: string; status: string; id: string }>(
          svc.database.url,
          'SELECT subject_id, status, id::text AS id FROM notifications',
        )
      ).map((r) => [`${r.subject_id}:${r.status}`, r.id]),
    );
    await forgetSince(cut, { orderIds: lostOrders, refundIds: [lostRefund] });
  }, 60_000);

  it('then the watch notices it, and the recovery restores every lost status from the journal', async () => {
    const [failover] = await waitUntil(
      'the recovery is done',
      async () => {
        const rows = await query<{ cause: string; state: string; restored: number; journal_problem: string | null }>(
          svc.database.url,
          'SELECT cause, state, restored, journal_problem FROM failovers',
        );
        return rows.length > 0 && rows.every((r) => r.state === 'done') && rows;
      },
      30_000,
    );
    expect(failover).toMatchObject({ cause: 'beat', restored: 2 * lostOrders.length + 1, journal_problem: null });
    expect(svc.logs.some((line) => line.includes('"level":50') && line.includes('the database failed over'))).toBe(
      true,
    );
    const [noticed] = (await svc.service.metrics.failover.noticed.get()).values.filter(
      (v) => v.labels.cause === 'beat',
    );
    expect(noticed?.value).toBe(1);

    const orders = await query<{ order_id: string; status: string }>(
      svc.database.url,
      'SELECT order_id, status FROM orders WHERE order_id = ANY($1) ORDER BY order_id',
      [lostOrders],
    );
    expect(orders.map((o) => o.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    const [refund] = await query<{ status: string }>(
      svc.database.url,
      'SELECT status FROM refunds WHERE refund_id = $1',
      [lostRefund],
    );
    expect(refund?.status).toBe('FINALIZED');
  });

  it('then each restored notification has its id again, marked as a restoration', async () => {
    const restored = await query<{ subject_id: string; status: string; id: string; observed_via: string }>(
      svc.database.url,
      `SELECT subject_id, status, id::text AS id, observed_via FROM notifications WHERE observed_via = 'restoration'`,
    );
    expect(restored).toHaveLength(2 * lostOrders.length + 1);
    for (const r of restored) expect(r.id).toBe(notificationIds.get(`${r.subject_id}:${r.status}`));
  });

  it('then each restored status is published once more under the id consumers have, marked restoredAfterFailover', async () => {
    const lostIds = new Set(
      originals.filter((e) => lostOrders.includes(e.subject) || e.type.startsWith('refund.')).map((e) => e.id),
    );
    const all = await consumer.waitFor(originals.length + lostIds.size);
    const again = all.slice(originals.length).map(
      (m) =>
        JSON.parse(m.content.toString('utf8')) as {
          id: string;
          data: { observedVia: string; restoredAfterFailover?: boolean };
        },
    );
    expect(new Set(again.map((e) => e.id))).toEqual(lostIds);
    expect(again.every((e) => e.data.observedVia === 'notification' && e.data.restoredAfterFailover === true)).toBe(
      true,
    );
  });
});

describe('When a failover is being restored', () => {
  it('then notifications get 503 recovering and readiness says so, and they are taken once it is restored', async () => {
    const holder = new pg.Client({ connectionString: svc.database.url });
    await holder.connect();
    try {
      // A failover as a watch writes it, its restoration held at its last write by the test's row lock.
      const [row] = (
        await holder.query<{ id: string }>(
          `INSERT INTO failovers (noticed_by, cause, previous_identity, current_identity, last_point)
           VALUES ('test', 'beat', 'beat 10', 'beat 5', now()) RETURNING id::text AS id`,
        )
      ).rows;
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM failovers WHERE id = $1 FOR UPDATE', [row?.id]);
      const orderId = uniqueId('FOHELD');
      const held = await waitUntil('writes held', async () => {
        const answer = await svc.post(orderBody({ orderId, status: 'PENDING' }));
        return answer.status === 503 && answer;
      });
      expect(held.body).toMatchObject({ error: { code: 'recovering' } });
      expect(held.headers['retry-after']).toBe('5');
      const ready = await svc.admin.get('/readyz').expect(200);
      expect(ready.body).toEqual({ status: 'ready', failoverRecovery: 'restoring' });
      await holder.query('ROLLBACK');
      await waitUntil('writes taken again', async () => {
        const answer = await svc.post(orderBody({ orderId, status: 'PENDING' }));
        return answer.status === 200;
      });
    } finally {
      await holder.end();
    }
  });
});

describe('When the journal holds an entry that fails verification', () => {
  it('then the recovery counts it and sets it aside, and records nothing of it', async () => {
    // After the failovers above: this loss comes once their restorations are over, and is a failover of its own.
    const orderId = uniqueId('FOFORGED');
    const body = Buffer.from(orderBody({ orderId, status: 'COMPLETED' }));
    const forged: JournalEntry = {
      kind: 'notification',
      at: new Date().toISOString(),
      id: '999999999',
      sourceAddress: '127.0.0.1',
      processingTimeMs: null,
      algorithm: 'md5',
      // Signed with a key the service does not have.
      signature: sign(body, 'not-the-second-key-of-anyone').split('signature=')[1]?.split(';')[0] ?? '',
      body: body.toString('base64'),
    };
    const connection = await amqp.connect(AMQP_URL);
    try {
      const channel = await connection.createConfirmChannel();
      channel.publish('', svc.journalQueue, encodeMessage({ entries: [forged] }), { persistent: true });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    const before = await query<{ id: string }>(svc.database.url, 'SELECT id::text AS id FROM failovers');
    await query(svc.database.url, 'UPDATE database_watch SET beat = beat - 1000000, beat_at = now()');
    const [failover] = await waitUntil(
      'a second recovery is done',
      async () => {
        const rows = await query<{ state: string; set_aside: number; restored: number }>(
          svc.database.url,
          'SELECT state, set_aside, restored FROM failovers WHERE NOT (id::text = ANY($1))',
          [before.map((r) => r.id)],
        );
        return rows.length === 1 && rows[0]?.state === 'done' && rows;
      },
      30_000,
    );
    expect(failover).toMatchObject({ set_aside: 1, restored: 0 });
    expect(await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id = $1', [orderId])).toHaveLength(0);
    expect(svc.logs.some((line) => line.includes('failed verification: set aside'))).toBe(true);
    expect(svc.logs.some((line) => line.includes(orderId))).toBe(false);
  });
});

describe('When the journal did not hold a status the failover lost', () => {
  const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-failover-window-5c2e' };
  let double: PaymentServiceDouble;
  let reconciling: TestService;

  beforeAll(async () => {
    double = new PaymentServiceDouble({ clients: [POS] });
    await double.start();
    reconciling = await startTestService({
      env: {
        PAYMENT_API_URL: double.url,
        PAYMENT_API_CREDENTIALS: `${POS.posId}:${POS.clientId}:${POS.clientSecret}`,
        PAYMENT_API_MAX_PER_SECOND: '100',
        RECONCILE_INTERVAL: '200ms',
      },
    });
  });
  afterAll(async () => {
    await reconciling.stop();
    await double.stop();
  });

  it('then the recovery checks the orders of the window before it with the payment API, and says none was left', async () => {
    const paid = uniqueId('FOWIN');
    const refundOnly = uniqueId('FOREFONLY');
    const pending = orderBody({ orderId: paid, status: 'PENDING' });
    const completed = orderBody({ orderId: paid, status: 'COMPLETED', payMethodType: 'PBL' });
    for (const body of [pending, completed]) {
      double.learn(Buffer.from(body));
      await reconciling.post(body).expect(200);
    }
    // An order known here only through a refund, final at the API.
    const refund = refundBody({ orderId: refundOnly, refundId: uniqueId('FORR'), status: 'FINALIZED' });
    double.learn(Buffer.from(orderBody({ orderId: refundOnly, status: 'COMPLETED' })));
    double.learn(Buffer.from(refund));
    await reconciling.post(refund).expect(200);
    await waitUntil('the journal confirmed every entry', async () => {
      const [value] = (await reconciling.service.metrics.failover.journalBacklog.get()).values;
      return (value?.value ?? 0) === 0;
    });
    // The journal lost them (the residual: acknowledged in the last moments, or its broker away), and the
    // database lost the COMPLETED: the order is back to PENDING, as on a standby that missed it.
    await deleteQueue(reconciling.journalQueue);
    const url = reconciling.database.url;
    await query(
      url,
      `DELETE FROM deliveries d USING notifications n WHERE d.notification_id = n.id
         AND d.notification_received_at = n.received_at AND n.subject_id = $1 AND n.status = 'COMPLETED'`,
      [paid],
    );
    await query(url, `DELETE FROM notifications WHERE subject_id = $1 AND status = 'COMPLETED'`, [paid]);
    await query(url, `DELETE FROM outbox_events WHERE order_id = $1 AND type = 'order.completed'`, [paid]);
    await query(
      url,
      `UPDATE orders SET status = 'PENDING', status_rank = 1, recorded = recorded - 'COMPLETED' WHERE order_id = $1`,
      [paid],
    );
    await query(url, 'UPDATE event_streams SET last_sequence = 1 WHERE order_id = $1', [paid]);
    await query(url, 'UPDATE database_watch SET beat = beat - 1000000, beat_at = now()');

    const [failover] = await waitUntil(
      'the recovery is done',
      async () => {
        const rows = await query<{ state: string; restored: number; window_orders: number; uncovered: number }>(
          url,
          'SELECT state, restored, window_orders, uncovered FROM failovers',
        );
        return rows.length === 1 && rows[0]?.state === 'done' && rows;
      },
      30_000,
    );
    expect(failover).toMatchObject({ restored: 0, uncovered: 0 });
    expect(failover?.window_orders).toBeGreaterThanOrEqual(2);
    const [order] = await query<{ status: string }>(url, 'SELECT status FROM orders WHERE order_id = $1', [paid]);
    expect(order?.status).toBe('COMPLETED');
    const [learnt] = await query<{ observed_via: string }>(
      url,
      `SELECT observed_via FROM notifications WHERE subject_id = $1 AND status = 'COMPLETED'`,
      [paid],
    );
    expect(learnt?.observed_via).toBe('reconciliation');
    // The order known only through its refund was asked about too: its own status is now known.
    const [askedAbout] = await query<{ status: string }>(url, 'SELECT status FROM orders WHERE order_id = $1', [
      refundOnly,
    ]);
    expect(askedAbout?.status).toBe('COMPLETED');
  }, 60_000);
});
