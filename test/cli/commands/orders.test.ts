import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { OTHER_POS_ID, POS_ID, uniqueId } from '../../support/signing';
import { cliEnv, parseJson, runCli } from '../cliSupport';

/** `orders expect`: a file of the orders the shop created, recorded as POST /orders/expected records them. */

let svc: TestService;
let env: Record<string, string>;
const dir = mkdtempSync(path.join(os.tmpdir(), 'orders-expect-'));

beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  env = cliEnv({
    DATABASE_URL: svc.database.url,
    PAYMENT_API_URL: 'http://127.0.0.1:9',
    PAYMENT_API_CREDENTIALS: `${POS_ID}:client:secret-orders-cli`,
    RECONCILE_GIVE_UP: '7d',
  });
});
afterAll(() => svc.stop());

const line = (fields: Record<string, unknown> = {}): string =>
  JSON.stringify({
    orderId: uniqueId('CLIEXP'),
    posId: POS_ID,
    createdAt: new Date(Date.now() - 60_000).toISOString(),
    ...fields,
  });

/** A time written with the +01:00 offset (as a shop in Warsaw writes it in winter). */
const inWarsaw = (ms: number): string => `${new Date(ms + 3_600_000).toISOString().slice(0, 19)}+01:00`;

const file = (name: string, text: string): string => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};

const expectedCount = async (): Promise<number> =>
  Number((await query<{ n: string }>(svc.database.url, 'SELECT count(*) AS n FROM expected_orders'))[0]?.n);

describe('command line: orders expect', () => {
  it('When a file of JSON lines names orders, then each is expected, a second run adds nothing, and the run is audited', async () => {
    const ids = [uniqueId('CLIEXP'), uniqueId('CLIEXP'), uniqueId('CLIEXP')];
    const text = [
      line({ orderId: ids[0] }),
      '',
      line({ orderId: ids[1], posId: OTHER_POS_ID, shopField: 'ignored' }),
      `${line({ orderId: ids[2], createdAt: inWarsaw(Date.now() - 60_000) })}\r`,
    ].join('\n');
    const at = file('three.jsonl', `${text}\n`);

    const run = await runCli(['orders', 'expect', '--file', at, '--json'], env);
    expect(run.code).toBe(0);
    expect(parseJson(run)).toEqual({ received: 3, new: 3 });
    const again = await runCli(['orders', 'expect', '--file', at], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('3 expected order(s) read, 0 new');

    const rows = await query<{ order_id: string; pos_id: string }>(
      svc.database.url,
      'SELECT order_id, pos_id FROM expected_orders WHERE order_id = ANY($1) ORDER BY order_id',
      [ids],
    );
    expect(rows).toEqual(
      [
        { order_id: ids[0], pos_id: POS_ID },
        { order_id: ids[1], pos_id: OTHER_POS_ID },
        { order_id: ids[2], pos_id: POS_ID },
      ].sort((a, b) => String(a.order_id).localeCompare(String(b.order_id))),
    );
    const audit = await query<{ via: string; target: string; detail: string }>(
      svc.database.url,
      `SELECT via, target, detail FROM console_audit WHERE action = 'orders_expected' ORDER BY id`,
    );
    expect(audit.slice(-2)).toEqual([
      { via: 'command line', target: '3 orders', detail: '3 new, from three.jsonl' },
      { via: 'command line', target: '3 orders', detail: '0 new, from three.jsonl' },
    ]);
  });

  it('When the orders come on stdin, then they are read from it', async () => {
    const orderId = uniqueId('CLIEXPSTDIN');
    const run = await runCli(['orders', 'expect', '--file', '-', '--json'], env, { input: `${line({ orderId })}\n` });
    expect(run.code).toBe(0);
    expect(parseJson(run)).toEqual({ received: 1, new: 1 });
  });

  it.each<[string, string, RegExp]>([
    ['a line that is not JSON', `${line()}\n{"orderId":\n`, /^error: line 2: not JSON; nothing was recorded/m],
    ['a bad order id', `${line()}\n\n${line({ orderId: 'a/b' })}\n`, /^error: line 3 \(orderId\): .*"\/"/m],
    ['a POS of no key', `${line({ posId: '999999' })}\n`, /^error: line 1 \(posId\): /m],
    [
      'a time without an offset',
      `${line()}\n${line({ createdAt: '2026-11-28T10:00:00' })}`,
      /^error: line 2 \(createdAt\): /m,
    ],
    [
      'a time in the future',
      `${line({ createdAt: new Date(Date.now() + 3_600_000).toISOString() })}`,
      /line 1 \(createdAt\): in the future/,
    ],
    [
      'a time older than RECONCILE_GIVE_UP',
      `${line({ createdAt: '2020-01-01T00:00:00Z' })}`,
      /line 1 \(createdAt\): older/,
    ],
    ['an array for a line', `[${line()}]`, /line 1: not an object/],
  ])('When the file has %s, then it exits 2 naming the line, and nothing is recorded', async (_, text, message) => {
    const before = await expectedCount();
    const run = await runCli(['orders', 'expect', '--file', file('bad.jsonl', text)], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(await expectedCount()).toBe(before);
  });

  it.each<[string, string[], Record<string, string | undefined>]>([
    ['no --file', ['orders', 'expect'], {}],
    ['a file that does not exist', ['orders', 'expect', '--file', '/nonexistent/orders.jsonl'], {}],
    [
      'no PAYMENT_API_URL',
      ['orders', 'expect', '--file', '-'],
      { PAYMENT_API_URL: undefined, PAYMENT_API_CREDENTIALS: undefined },
    ],
  ])('When %s, then it is a usage error (exit 2)', async (_, args, vars) => {
    const run = await runCli(args, cliEnv({ ...env, ...vars }), { input: `${line()}\n` });
    expect(run.code).toBe(2);
  });
});
