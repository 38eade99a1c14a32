import { query, testDatabase, type TestDatabase } from '../../support/database';
import { historyDays } from '../../support/history';
import { startTestService } from '../../support/service';
import { cliEnv, runCli, runProgram } from '../cliSupport';
import { pendingEvents } from '../../support/outbox';

// `notification-receiver history seed`: a history as the live intake would have left it, for the benchmark and the
// tests of what a year of it costs (issue 30).

const ORDERS = 3_000;
const DAYS = 62;
const SAMPLE = 10;
const DAY_MS = 86_400_000;

let db: TestDatabase;
let sample: string[];
let seedStderr: string;

beforeAll(async () => {
  db = testDatabase();
  const run = await runCli(
    ['history', 'seed', '--orders', String(ORDERS), '--days', String(DAYS), '--sample', String(SAMPLE)],
    cliEnv({ DATABASE_URL: db.url }),
    { timeoutMs: 120_000 },
  );
  seedStderr = run.stderr;
  expect(run.code).toBe(0);
  sample = run.stdout.trim().split('\n');
}, 150_000);
afterAll(() => db.drop());

const count = async (sql: string): Promise<number> => Number((await query<{ n: string }>(db.url, sql))[0]?.n);

describe('history seed', () => {
  it('When it has run, then it said what it wrote on stderr, and the database holds that many orders', async () => {
    expect(seedStderr).toMatch(/seeded 3,000 orders, [\d,]+ refunds, [\d,]+ notifications, [\d,]+ deliveries/);
    expect(await count('SELECT count(*) AS n FROM orders')).toBe(ORDERS);
    expect(await count('SELECT count(*) AS n FROM order_owners')).toBe(ORDERS);
    expect(await count('SELECT count(*) AS n FROM event_streams')).toBe(ORDERS);
    // A history the service never received, on the record so that no one takes it for real orders.
    expect(await query(db.url, "SELECT via, target, result FROM console_audit WHERE action = 'history_seed'")).toEqual([
      { via: 'command line', target: `${ORDERS} orders over ${DAYS} day(s)`, result: `seeded ${ORDERS}` },
    ]);
  });

  it('When orders are seeded, then about 70 % completed, 5 % canceled and 25 % abandoned, a tenth of the completed refunded', async () => {
    const share = async (status: string) =>
      (await count(`SELECT count(*) AS n FROM orders WHERE status = '${status}'`)) / ORDERS;
    expect(await share('COMPLETED')).toBeCloseTo(0.7, 1);
    expect(await share('CANCELED')).toBeCloseTo(0.05, 1);
    expect(await share('PENDING')).toBeCloseTo(0.25, 1);
    // Abandoned orders were only ever PENDING; completed ones went through every status they notified.
    expect(
      await count(
        `SELECT count(*) AS n FROM orders WHERE status = 'PENDING' AND recorded <> jsonb_build_object('PENDING', recorded->'PENDING')`,
      ),
    ).toBe(0);
    const refunds = await count('SELECT count(*) AS n FROM refunds');
    const completed = await count(`SELECT count(*) AS n FROM orders WHERE status = 'COMPLETED'`);
    expect(refunds / completed).toBeGreaterThan(0.06);
    expect(refunds / completed).toBeLessThan(0.14);
  });

  it('When deliveries are seeded, then about one in five repeats a notification already recorded', async () => {
    const deliveries = await count('SELECT count(*) AS n FROM deliveries');
    const duplicates = await count(`SELECT count(*) AS n FROM deliveries WHERE outcome = 'duplicate'`);
    expect(duplicates / deliveries).toBeGreaterThan(0.16);
    expect(duplicates / deliveries).toBeLessThan(0.24);
    // Every delivery is of a seeded notification, in its notification's day.
    expect(
      await count(`SELECT count(*) AS n FROM deliveries d LEFT JOIN notifications n
                    ON n.id = d.notification_id AND n.received_at = d.notification_received_at WHERE n.id IS NULL`),
    ).toBe(0);
  });

  it('When times are seeded, then they spread over the days asked, ending now, each day in its partition', async () => {
    const [span] = await query<{ oldest: Date; newest: Date; days: string }>(
      db.url,
      `SELECT min(received_at) AS oldest, max(received_at) AS newest,
              count(DISTINCT (received_at AT TIME ZONE 'UTC')::date) AS days FROM notifications`,
    );
    expect(Date.now() - span!.oldest.getTime()).toBeGreaterThan((DAYS - 1) * DAY_MS);
    expect(Date.now() - span!.oldest.getTime()).toBeLessThan((DAYS + 1) * DAY_MS);
    expect(Date.now() - span!.newest.getTime()).toBeLessThan(DAY_MS);
    expect(Number(span!.days)).toBeGreaterThanOrEqual(DAYS - 1);
    const days = await historyDays(db.url);
    expect(days.notifications!.length).toBeGreaterThanOrEqual(DAYS + 7);
    // Order ids look like the payment service's: random, 20 characters and more.
    const ids = await query<{ order_id: string }>(db.url, 'SELECT order_id FROM orders LIMIT 100');
    for (const { order_id } of ids) expect(order_id).toMatch(/^[A-Z0-9]{20,}$/);
  });

  it('When bodies are seeded, then only the last 30 days keep theirs, and the days before count as purged', async () => {
    const cutoff = new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10);
    expect(
      await count(`SELECT count(*) AS n FROM notifications WHERE body IS NOT NULL AND received_at < '${cutoff}'::date`),
    ).toBe(0);
    expect(
      await count(
        `SELECT count(*) AS n FROM notifications WHERE body IS NULL AND received_at >= '${cutoff}'::date + 1`,
      ),
    ).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM history_bodies_purged WHERE day >= '${cutoff}'::date`)).toBe(0);
    expect(await count('SELECT count(*) AS n FROM history_bodies_purged')).toBeGreaterThan(DAYS - 32);
  });

  it('When events are seeded, then they are published, and the outbox keeps only its retention', async () => {
    expect(await pendingEvents(db.url)).toBe(0);
    // OUTBOX_RETENTION (7 days) back from the seed's end, a minute before it started: an hour's slack for the run,
    // and the whole retention kept (the seventh day holds events).
    expect(
      await count(`SELECT count(*) AS n FROM outbox_events WHERE created_at < now() - interval '7 days 1 hour'`),
    ).toBe(0);
    expect(
      await count(`SELECT count(*) AS n FROM outbox_events WHERE created_at < now() - interval '6 days'`),
    ).toBeGreaterThan(0);
    expect(await count('SELECT count(*) AS n FROM outbox_events')).toBeGreaterThan(0);
    // Each order's stream counts its applied statuses.
    expect(
      await count(`SELECT count(*) AS n FROM event_streams s JOIN orders o USING (order_id)
                    WHERE s.last_sequence <> (SELECT count(*) FROM jsonb_object_keys(o.recorded))
                        + (SELECT coalesce(sum((SELECT count(*) FROM jsonb_object_keys(r.recorded))), 0)
                             FROM refunds r WHERE r.order_id = o.order_id)`),
    ).toBe(0);
  });

  it('When --sample is given, then it prints that many ids, half from the oldest month and half from the newest', async () => {
    expect(sample).toHaveLength(SAMPLE);
    expect(new Set(sample).size).toBe(SAMPLE);
    const rows = await query<{ order_id: string; created_at: Date }>(
      db.url,
      'SELECT order_id, created_at FROM orders WHERE order_id = ANY($1)',
      [sample],
    );
    const age = new Map(rows.map((r) => [r.order_id, (Date.now() - r.created_at.getTime()) / DAY_MS]));
    for (const id of sample.slice(0, SAMPLE / 2)) expect(age.get(id)).toBeGreaterThan(DAYS - 31);
    for (const id of sample.slice(SAMPLE / 2)) expect(age.get(id)).toBeLessThan(31);
  });

  it('When the service runs on the seeded history, then it shows old and new orders, and a repeat of a seeded notification is a duplicate', async () => {
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
    try {
      for (const orderId of [sample[0]!, sample.at(-1)!]) {
        const order = (await svc.admin.get(`/orders/${orderId}`).expect(200)).body as { history: unknown[] };
        expect(order.history.length).toBeGreaterThan(0);
      }
      // The newest order's first notification, byte for byte as seeded: recognized, not recorded again.
      const [seeded] = await query<{ id: string; body: Buffer }>(
        db.url,
        `SELECT id, body FROM notifications WHERE body IS NOT NULL AND received_at > now() - interval '2 days'
          ORDER BY received_at DESC LIMIT 1`,
      );
      const before = await count('SELECT count(*) AS n FROM notifications');
      expect((await svc.post(seeded!.body)).status).toBe(200);
      expect(await count('SELECT count(*) AS n FROM notifications')).toBe(before);
      const [last] = await query<{ outcome: string }>(
        db.url,
        'SELECT outcome FROM deliveries WHERE notification_id = $1 ORDER BY received_at DESC LIMIT 1',
        [seeded!.id],
      );
      expect(last!.outcome).toBe('duplicate');
    } finally {
      await svc.stop();
    }
  }, 60_000);

  it.each([
    [['--orders', '0', '--days', '10'], /--orders/],
    [['--orders', '-5', '--days', '10'], /--orders/],
    [['--orders', '1000000000000', '--days', '10'], /--orders/],
    [['--orders', '10', '--days', '0'], /--days/],
    [['--orders', '10', '--days', 'many'], /--days/],
    [['--orders', '10'], /--days/],
    [['--orders', '10', '--days', '10', '--sample', '11'], /--sample 11/],
  ])(
    'When given %p, then it refuses with exit code 2, naming the option, before it connects',
    async (args, message) => {
      const run = await runProgram(
        ['history', 'seed', ...args],
        cliEnv({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }),
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(message);
    },
  );
});
