import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ReconcileLine } from '../../../src/cli/commands/reconcile';
import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, OTHER_POS_ID, POS_ID, refundBody, uniqueId } from '../../support/signing';
import { cliEnv, parseJson, runCli } from '../cliSupport';

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

const listDir = mkdtempSync(path.join(os.tmpdir(), 'reconcile-list-'));
const listFile = (name: string, text: string): string => {
  const at = path.join(listDir, name);
  writeFileSync(at, text);
  return at;
};

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

  it('When a file lists orders no record covers, then --orders-from checks each once whatever its state here, those never seen with --pos-id, and audits each', async () => {
    const refundOnly = uniqueId('CLILREF');
    const finalHere = uniqueId('CLILFIN');
    const neverSeen = uniqueId('CLILNEW');
    await svc.post(refundBody({ orderId: refundOnly, refundId: `${refundOnly}R`, status: 'FINALIZED' })).expect(200);
    double.setOrder({ orderId: refundOnly, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '61' });
    double.setRefund(refundOnly, { refundId: `${refundOnly}R`, status: 'FINALIZED' });
    await svc.post(orderBody({ orderId: finalHere, status: 'COMPLETED', paymentId: '62' })).expect(200);
    double.setOrder({ orderId: finalHere, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '62' });
    double.setRefund(finalHere, { refundId: `${finalHere}R`, status: 'FINALIZED' });
    double.setOrder({ orderId: neverSeen, merchantPosId: OTHER_POS_ID, status: 'CANCELED' });
    const list = listFile('three.txt', `${refundOnly}\r\n\n  ${finalHere}  \n${neverSeen}\n${refundOnly}\n`);

    const run = await runCli(['reconcile', '--orders-from', list, '--pos-id', OTHER_POS_ID, '--json'], env);
    expect(run.code).toBe(0);
    expect(parseJson<Report>(run).orders).toEqual([
      expect.objectContaining({ orderId: refundOnly, posId: POS_ID, result: 'repaired', applied: ['COMPLETED'] }),
      expect.objectContaining({ orderId: finalHere, result: 'repaired', applied: [`refund ${finalHere}R FINALIZED`] }),
      expect.objectContaining({ orderId: neverSeen, posId: OTHER_POS_ID, result: 'repaired', applied: ['CANCELED'] }),
    ]);
    expect(await statusOf(refundOnly)).toBe('COMPLETED');
    expect(await statusOf(neverSeen)).toBe('CANCELED');
    const audit = await query<{ order_id: string; via: string; result: string }>(
      svc.database.url,
      `SELECT order_id, via, result FROM console_audit WHERE action = 'reconcile' AND order_id = ANY($1) ORDER BY order_id`,
      [[refundOnly, finalHere, neverSeen]],
    );
    expect(audit).toEqual(
      [refundOnly, finalHere, neverSeen]
        .sort()
        .map((order_id) => ({ order_id, via: 'command line', result: 'repaired' })),
    );

    // The same from stdin, once more: each learns nothing now.
    const again = await runCli(['reconcile', '--orders-from', '-', '--json'], env, { input: `${finalHere}\n` });
    expect(again.code).toBe(0);
    expect(parseJson<Report>(again).orders).toEqual([
      expect.objectContaining({ orderId: finalHere, result: 'unchanged' }),
    ]);
  });

  it('When a file lists more than 100 orders, then the run is one audit row, and orders the API does not know exit 1', async () => {
    const ids = Array.from({ length: 101 }, () => uniqueId('CLILMANY'));
    const run = await runCli(
      ['reconcile', '--orders-from', listFile('many.txt', ids.join('\n')), '--pos-id', POS_ID, '--json'],
      cliEnv({ ...env, PAYMENT_API_MAX_PER_SECOND: '1000' }),
    );
    expect(run.code).toBe(1);
    expect(parseJson<Report>(run).orders.map((o) => [o.orderId, o.result])).toEqual(ids.map((id) => [id, 'not_found']));
    const audit = await query<{ target: string; order_id: string | null; result: string; detail: string }>(
      svc.database.url,
      `SELECT target, order_id, result, detail FROM console_audit WHERE action = 'reconcile' AND detail = 'from many.txt'`,
    );
    // Written before the first order is asked about, completed with how the run ended.
    expect(audit).toEqual([
      { target: '101 orders', order_id: null, result: '0 of 101 answered, 0 repaired', detail: 'from many.txt' },
    ]);
  });

  it.each<[string, string, RegExp]>([
    [
      'an id with a /',
      'A1\n\nA2\nc/d\nA3\n',
      /^error: line 4 \(orderId\): the id contains "\/"; nothing was reconciled$/m,
    ],
    ['an id of ..', '..\n', /^error: line 1 \(orderId\): the id is a dot segment/m],
    ['a control character', 'A1\nb\u0007c\n', /^error: line 2 \(orderId\): the id contains a control character/m],
    ['no id at all', '\n \n', /^error: line 1: no order id in it/m],
    [
      '10,001 ids',
      Array.from({ length: 10_001 }, (_, i) => `ID${i}`).join('\n'),
      /^error: line 10001: more than 10000/m,
    ],
    ['more than 2 MiB', `${'x'.repeat(100)}\n`.repeat(21_000), /^error: the file .* is larger than 2097152 bytes/m],
  ])('When the file has %s, then it exits 2 naming the line, and nothing is asked', async (_, text, message) => {
    const before = double.requests.length;
    const run = await runCli(['reconcile', '--orders-from', listFile('bad.txt', text)], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(double.requests.length).toBe(before);
  });

  it.each([
    [
      'no PAYMENT_API_URL',
      ['reconcile', '--stuck'],
      { PAYMENT_API_URL: undefined, PAYMENT_API_CREDENTIALS: undefined },
    ],
    ['neither --order nor --stuck', ['reconcile'], {}],
    ['both --order and --stuck', ['reconcile', '--order', 'X', '--stuck'], {}],
    ['both --orders-from and --stuck', ['reconcile', '--orders-from', '-', '--stuck'], {}],
    ['both --orders-from and --order', ['reconcile', '--orders-from', '-', '--order', 'X'], {}],
    ['--orders-from a file that does not exist', ['reconcile', '--orders-from', '/nonexistent/ids.txt'], {}],
    [
      '--orders-from with a --pos-id of no credentials',
      ['reconcile', '--orders-from', listFile('one.txt', 'A1\n'), '--pos-id', '999999'],
      {},
    ],
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
