import type { ReprojectResult } from '../../../src/recording/reprojectionPages';
import { buildTraffic, runSimulation, scaledClock, seededRandom } from '../../../src/simulator';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, OTHER_KEY, OTHER_POS_ID, POS_ID, SECOND_KEY, uniqueId } from '../../support/signing';
import { cliEnv, parseJson, runCli } from '../cliSupport';

type Report = ReprojectResult & { applied: boolean };

const ORDER_COLUMNS =
  'order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, payment_id, pay_method_type, local_receipt_date_time';
const REFUND_COLUMNS =
  'refund_id, order_id, ext_order_id, ext_refund_id, status, status_rank, amount, currency_code, status_date_time, refund_date, reason, reason_description';

let svc: TestService;
let env: Record<string, string>;

const projections = async (): Promise<{ orders: unknown[]; refunds: unknown[] }> => ({
  orders: await query(svc.database.url, `SELECT ${ORDER_COLUMNS} FROM orders ORDER BY order_id`),
  refunds: await query(svc.database.url, `SELECT ${REFUND_COLUMNS} FROM refunds ORDER BY refund_id`),
});

beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  env = cliEnv({ DATABASE_URL: svc.database.url });
  // Realistic random traffic from two POS, with duplicates, reordering and delays, through the real service.
  for (const [posId, key, seed] of [
    [POS_ID, SECOND_KEY, 101],
    [OTHER_POS_ID, OTHER_KEY, 202],
  ] as const) {
    const random = seededRandom(seed);
    const lifecycles = buildTraffic({
      orders: 20,
      plan: 'random',
      base: {
        posId,
        notifyUrl: `${svc.publicUrl}/notifications`,
        gapMs: 2000,
        runStartedAt: new Date(),
        currencyCode: 'PLN',
      },
      spreadMs: 6000,
      random,
    });
    const report = await runSimulation({
      url: `${svc.publicUrl}/notifications`,
      lifecycles,
      secondKey: key,
      algorithm: posId === POS_ID ? 'MD5' : 'SHA-256',
      signatureHeaders: 'both',
      processingTime: true,
      faults: { duplicates: 0.3, reorder: 0.5, maxDelayMs: 3000 },
      random,
      clock: scaledClock(40),
    });
    expect(report.summary.gaveUp).toBe(0);
    expect(report.summary.outcomes.stale).toBeGreaterThan(0);
  }
  // Sequences whose fields change between notifications, so the merge rule itself is exercised: a later
  // applied notification wins, but for the facts that never change (the amount stays the first one's); a
  // field it lacks keeps its value; a stale one changes nothing.
  const later = uniqueId('MERGE');
  const lacking = uniqueId('MERGE');
  const stale = uniqueId('MERGE');
  for (const body of [
    orderBody({ orderId: later, status: 'PENDING', totalAmount: '100' }),
    orderBody({ orderId: later, status: 'COMPLETED', totalAmount: '200', paymentId: 'P2', payMethodType: 'PBL' }),
    orderBody({ orderId: lacking, status: 'WAITING_FOR_CONFIRMATION', paymentId: 'P3', payMethodType: 'CARD_TOKEN' }),
    orderBody({ orderId: lacking, status: 'CANCELED' }),
    orderBody({ orderId: stale, status: 'COMPLETED', totalAmount: '300', paymentId: 'P4' }),
    orderBody({ orderId: stale, status: 'PENDING', totalAmount: '999', paymentId: 'P5' }),
  ]) {
    expect((await svc.post(body)).status).toBe(200);
  }
  const merged = await query(
    svc.database.url,
    'SELECT order_id, total_amount, payment_id, pay_method_type FROM orders WHERE order_id = ANY($1) ORDER BY order_id',
    [[later, lacking, stale]],
  );
  expect(merged).toEqual(
    [
      { order_id: later, total_amount: '100', payment_id: 'P2', pay_method_type: 'PBL' },
      { order_id: lacking, total_amount: '15000', payment_id: 'P3', pay_method_type: 'CARD_TOKEN' },
      { order_id: stale, total_amount: '300', payment_id: 'P4', pay_method_type: null },
    ].sort((a, b) => a.order_id.localeCompare(b.order_id)),
  );
}, 180_000);
afterAll(() => svc.stop());

describe('reproject', () => {
  it('When the projections came from live traffic, then rebuilding them from the notifications finds no differences', async () => {
    const run = await runCli(['reproject', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<Report>(run);
    expect(report.differences).toEqual([]);
    expect(report.rebuilt.orders).toBe(43);
    expect(report.stored).toEqual(report.rebuilt);
    expect(report.rebuilt.refunds).toBeGreaterThan(0);
    const [{ n }] = (await query<{ n: string }>(svc.database.url, 'SELECT count(*) AS n FROM notifications')) as [
      { n: string },
    ];
    expect(report.notifications).toBe(Number(n));
    expect(run.stdout).toContain('"applied": false');
  });

  it('When one order row is corrupted, then the dry run finds exactly that row and changes nothing, and --apply repairs it', async () => {
    const before = await projections();
    const [victim] = await query<{ order_id: string; payment_id: string }>(
      svc.database.url,
      `SELECT order_id, payment_id FROM orders WHERE status = 'COMPLETED' AND pay_method_type IS NOT NULL ORDER BY order_id LIMIT 1`,
    );
    if (!victim) throw new Error('the traffic completed no order');
    await query(
      svc.database.url,
      `UPDATE orders SET status = 'PENDING', status_rank = 1, pay_method_type = NULL WHERE order_id = $1`,
      [victim.order_id],
    );
    const corrupted = await projections();

    const dry = await runCli(['reproject', '--dry-run', '--json'], env);
    expect(dry.code).toBe(1);
    expect(parseJson<Report>(dry).differences).toEqual([
      {
        table: 'orders',
        id: victim.order_id,
        change: 'different',
        fields: [
          { column: 'status', stored: 'PENDING', rebuilt: 'COMPLETED' },
          { column: 'status_rank', stored: 1, rebuilt: 3 },
          { column: 'pay_method_type', stored: null, rebuilt: expect.stringMatching(/^(PBL|CARD_TOKEN)$/) },
        ],
      },
    ]);
    expect(await projections()).toEqual(corrupted);

    const human = await runCli(['reproject'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(
      `order ${victim.order_id}: status PENDING -> COMPLETED; status_rank 1 -> 3; pay_method_type null -> `,
    );
    expect(human.stdout).toContain('Dry run: nothing changed. Run with --apply to repair.');

    const apply = await runCli(['reproject', '--apply', '--json'], env);
    expect(apply.code).toBe(0);
    expect(parseJson<Report>(apply)).toMatchObject({
      applied: true,
      differences: [expect.objectContaining({ id: victim.order_id })],
    });
    expect(await projections()).toEqual(before);
    expect((await runCli(['reproject'], env)).code).toBe(0);
  });

  it('When a refund row is missing and an order row has no notification, then the first is re-created and the second deleted', async () => {
    const before = await projections();
    const [refund] = await query<{ refund_id: string }>(
      svc.database.url,
      'SELECT refund_id FROM refunds ORDER BY refund_id LIMIT 1',
    );
    if (!refund) throw new Error('the traffic made no refund');
    await query(svc.database.url, 'DELETE FROM refunds WHERE refund_id = $1', [refund.refund_id]);
    await query(
      svc.database.url,
      `INSERT INTO orders (order_id, status, status_rank) VALUES ('GHOST-ORDER', 'COMPLETED', 3)`,
    );

    const dry = parseJson<Report>(await runCli(['reproject', '--json'], env));
    expect(dry.differences.map((d) => [d.table, d.id, d.change])).toEqual([
      ['orders', 'GHOST-ORDER', 'extra'],
      ['refunds', refund.refund_id, 'missing'],
    ]);
    const apply = await runCli(['reproject', '--apply'], env);
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain('Repaired 2 row(s) in one transaction.');
    expect(await projections()).toEqual(before);
  });

  it("When retention removed part of an order's history, then reproject leaves that projection as it is, and re-creates a missing refund with its recorded statuses", async () => {
    const orderId = uniqueId('KEPT');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    expect((await svc.post(orderBody({ orderId, status: 'COMPLETED' }))).status).toBe(200);
    // Its PENDING's day is gone, as retention removes one (the projection still records it).
    await query(svc.database.url, `DELETE FROM notifications WHERE order_id = $1 AND status = 'PENDING'`, [orderId]);
    const before = await projections();
    const dry = parseJson<Report>(await runCli(['reproject', '--json'], env));
    expect(dry.partialHistory).toEqual({ orders: 1, refunds: 0 });
    expect(dry.differences).toEqual([]);
    expect((await runCli(['reproject', '--apply'], env)).code).toBe(0);
    expect(await projections()).toEqual(before);

    const [refund] = await query<{ refund_id: string; recorded: unknown }>(
      svc.database.url,
      'SELECT refund_id, recorded FROM refunds ORDER BY refund_id LIMIT 1',
    );
    await query(svc.database.url, 'DELETE FROM refunds WHERE refund_id = $1', [refund?.refund_id]);
    expect((await runCli(['reproject', '--apply'], env)).code).toBe(0);
    expect(
      await query(svc.database.url, 'SELECT refund_id, recorded FROM refunds WHERE refund_id = $1', [
        refund?.refund_id,
      ]),
    ).toEqual([refund]);
  });
});
