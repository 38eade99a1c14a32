import type { ReconcileLine } from '../../src/cli/commands/reconcile';
import { PaymentServiceDouble, type DoubleClient } from '../../src/simulator';
import { query } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, OTHER_POS_ID, POS_ID, uniqueId } from '../support/signing';
import { cliEnv, parseJson, runCli } from './cliSupport';

interface Report {
  dryRun: boolean;
  orders: ReconcileLine[];
}

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'cli-secret-0b1c2d3e' };
const OTHER: DoubleClient = { posId: OTHER_POS_ID, clientId: OTHER_POS_ID, clientSecret: 'cli-other-4f5a6b7c' };

let svc: TestService;
let double: PaymentServiceDouble;
let env: Record<string, string>;

beforeAll(async () => {
  double = new PaymentServiceDouble({ clients: [POS, OTHER] });
  await double.start();
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  env = cliEnv({
    DATABASE_URL: svc.database.url,
    PAYMENT_API_URL: double.url,
    PAYMENT_API_CREDENTIALS: [POS, OTHER].map((c) => `${c.posId}:${c.clientId}:${c.clientSecret}`).join(','),
    RECONCILE_AFTER: '5m',
  });
});
afterAll(async () => {
  await svc.stop();
  await double.stop();
});

const statusOf = async (orderId: string): Promise<string | undefined> =>
  (await query<{ status: string }>(svc.database.url, 'SELECT status FROM orders WHERE order_id = $1', [orderId]))[0]
    ?.status;

describe('command line: reconcile', () => {
  it('When orders are stuck past RECONCILE_AFTER, then --stuck --dry-run lists what the API says and changes nothing, and --stuck applies it', async () => {
    const stuck = [uniqueId('CLIST'), uniqueId('CLIST')];
    const fresh = uniqueId('CLIFRESH');
    for (const orderId of [...stuck, fresh]) {
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '42' });
    }
    // Their last observation an hour ago; the fresh one's just now, within RECONCILE_AFTER.
    await query(svc.database.url, `UPDATE orders SET updated_at = now() - interval '1 hour' WHERE order_id = ANY($1)`, [
      stuck,
    ]);

    const dry = await runCli(['reconcile', '--stuck', '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    const listed = parseJson<Report>(dry);
    expect(listed.dryRun).toBe(true);
    expect(listed.orders.map((o) => o.orderId).sort()).toEqual([...stuck].sort());
    for (const line of listed.orders)
      expect(line).toMatchObject({ posId: POS_ID, result: 'unchanged', said: ['COMPLETED'], applied: [] });
    expect(await statusOf(stuck[0] as string)).toBe('PENDING');

    const applied = await runCli(['reconcile', '--stuck'], env);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/ORDER\s+POS\s+API SAYS\s+RESULT\s+APPLIED/);
    expect(applied.stdout).toContain('2 order(s) checked, 2 repaired');
    expect(await statusOf(stuck[0] as string)).toBe('COMPLETED');
    expect(await statusOf(stuck[1] as string)).toBe('COMPLETED');
    expect(await statusOf(fresh)).toBe('PENDING');
  });

  it('When one order is asked for, then --order checks it now; an order never seen needs --pos-id among several POS', async () => {
    const orderId = uniqueId('CLIONE');
    double.setOrder({ orderId, merchantPosId: OTHER_POS_ID, status: 'CANCELED' });

    const unknownPos = await runCli(['reconcile', '--order', orderId, '--json'], env);
    expect(unknownPos.code).toBe(1);
    expect(parseJson<Report>(unknownPos).orders).toEqual([expect.objectContaining({ result: 'pos_required' })]);

    const run = await runCli(['reconcile', '--order', orderId, '--pos-id', OTHER_POS_ID, '--json'], env);
    expect(run.code).toBe(0);
    expect(parseJson<Report>(run).orders).toEqual([
      expect.objectContaining({ posId: OTHER_POS_ID, result: 'repaired', applied: ['CANCELED'] }),
    ]);
    expect(await statusOf(orderId)).toBe('CANCELED');

    const missing = await runCli(['reconcile', '--order', uniqueId('NONE'), '--pos-id', POS_ID, '--json'], env);
    expect(missing.code).toBe(1);
    expect(parseJson<Report>(missing).orders).toEqual([expect.objectContaining({ result: 'not_found' })]);
  });

  it.each([
    [
      'no PAYMENT_API_URL',
      ['reconcile', '--stuck'],
      { PAYMENT_API_URL: undefined, PAYMENT_API_CREDENTIALS: undefined },
    ],
    ['neither --order nor --stuck', ['reconcile'], {}],
    ['both --order and --stuck', ['reconcile', '--order', 'X', '--stuck'], {}],
    ['--pos-id without --order', ['reconcile', '--stuck', '--pos-id', POS_ID], {}],
    ['an --order of ..', ['reconcile', '--order', '..'], {}],
    ['an --order with a /', ['reconcile', '--order', 'a/b'], {}],
    ['an --order with a control character', ['reconcile', '--order', 'a\nb'], {}],
    ['an --order over 128 characters', ['reconcile', '--order', 'x'.repeat(129)], {}],
  ])('When %s, then it is a usage error (exit 2)', async (_, args, vars) => {
    const before = double.requests.length;
    const run = await runCli(args, cliEnv({ ...env, ...vars }));
    expect(run.code).toBe(2);
    expect(double.requests.length).toBe(before);
  });
});
