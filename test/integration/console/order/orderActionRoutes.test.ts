/**
 * The console's check with the payment service, through its pages against the payment-service double: what a
 * result page says when the check did what was asked and when it failed (timed out, unreachable, credentials
 * refused, order unknown), the order's checks box, and the status board's line for the payment API of each POS.
 */
import request from 'supertest';
import { PaymentServiceDouble, type DoubleClient } from '../../../../src/simulator';
import { CONSOLE_ENV, OPERATOR_TOKEN, SAME_ORIGIN, signIn, textOf } from '../../../support/console';
import { query } from '../../../support/database';
import { startTestService, type TestService } from '../../../support/service';
import {
  exactBytes,
  OTHER_KEY,
  OTHER_POS_ID,
  orderBody,
  POS_ID,
  SECOND_KEY,
  sign,
  uniqueId,
} from '../../../support/signing';

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-4c1f0e2b9d7a' };
const OTHER: DoubleClient = { posId: OTHER_POS_ID, clientId: OTHER_POS_ID, clientSecret: 'other-secret-9a8b7c6d' };

let double: PaymentServiceDouble;
let svc: TestService;
let operator: string;

beforeAll(async () => {
  double = new PaymentServiceDouble({ clients: [POS, OTHER] });
  await double.start();
  svc = await startTestService({
    env: {
      ...CONSOLE_ENV,
      RELAY_ENABLED: 'false',
      PAYMENT_API_URL: double.url,
      // The other POS's secret is not the one the double knows: its credentials are refused.
      PAYMENT_API_CREDENTIALS: `${POS.posId}:${POS.clientId}:${POS.clientSecret},${OTHER.posId}:${OTHER.clientId}:wrong-secret-0000`,
      PAYMENT_API_TIMEOUT: '300ms',
      // Only the console checks here: the sweep waits an hour.
      RECONCILE_AFTER: '1h',
      RECONCILE_INTERVAL: '1h',
      CONSOLE_TIME_ZONE: 'Europe/Warsaw',
    },
  });
  operator = await signIn(svc.adminUrl, OPERATOR_TOKEN);
});
afterAll(async () => {
  await svc?.stop();
  await double?.stop();
});

const get = (path: string) => request(svc.adminUrl).get(path).set('Cookie', operator);
const check = (orderId: string) =>
  request(svc.adminUrl)
    .post(`/console/orders/${orderId}/reconcile`)
    .set('Cookie', operator)
    .set(SAME_ORIGIN)
    .type('form')
    .send({ confirm: 'yes' });

async function pendingOrder(prefix: string, posId = POS_ID): Promise<string> {
  const orderId = uniqueId(prefix);
  const body = orderBody({ orderId, status: 'PENDING', merchantPosId: posId });
  const res = await svc.public
    .post('/notifications')
    .set('Content-Type', 'application/json;charset=UTF-8')
    .set('OpenSvc-Signature', sign(body, posId === POS_ID ? SECOND_KEY : OTHER_KEY))
    .serialize(exactBytes)
    .send(Buffer.from(body));
  expect(res.status).toBe(200);
  return orderId;
}

const notificationsOf = async (orderId: string) =>
  (await query(svc.database.url, 'SELECT count(*)::int AS n FROM notifications WHERE order_id = $1', [orderId]))[0]?.n;

const boardLine = (page: string, id: string): string =>
  new RegExp(`<tr id="line-${id}"[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';

describe('console: a check with the payment service', () => {
  it('When the payment service knows a status the service never got, then the result says it was learnt, the status now and that no check follows', async () => {
    const orderId = await pendingOrder('CKDONE');
    double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '5011' });
    const res = await check(orderId);
    expect(res.status).toBe(200);
    const said = textOf(res.text);
    expect(res.text).toContain('data-outcome="done"');
    expect(said).toContain('Done: the service learnt 1 status whose notification never came.');
    expect(said).toMatch(/The order now Paid \(COMPLETED\) since/);
    expect(said).toContain('Next automatic check none: the order is final');
    const page = textOf((await get(`/console/orders/${orderId}`)).text);
    expect(page).toMatch(
      /Checks asked for by people 1; the last .* by olga: learnt a status whose notification never came/,
    );
  });

  it('When the payment service does not answer in time, then the result says it timed out, that nothing changed, the status now and the next check', async () => {
    const orderId = await pendingOrder('CKSLOW');
    double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED' });
    double.injectFaults({ endpoint: 'order', delayMs: 2000, times: 10 });
    try {
      const res = await check(orderId);
      expect(res.status).toBe(504);
      const said = textOf(res.text);
      expect(res.text).toContain('data-outcome="not_done"');
      expect(said).toContain(
        'What failed the payment service timed out: it did not answer within 300 ms (PAYMENT_API_TIMEOUT)',
      );
    } finally {
      double.clearFaults();
    }
  });

  it('When a POS’s credentials are refused, then the result says so and the board names that POS', async () => {
    const orderId = await pendingOrder('CKCRED', OTHER_POS_ID);
    const res = await check(orderId);
    expect(res.status).toBe(502);
    expect(textOf(res.text)).toContain(`the payment service refused the credentials of shop account ${OTHER_POS_ID}`);
    const line = boardLine((await get('/console/attention')).text, `payment-api-${OTHER_POS_ID}`);
    expect(line).toContain('data-severity="critical"');
    expect(textOf(line)).toContain(`The payment service refuses the credentials of shop account ${OTHER_POS_ID}`);
  });

  it('When the payment service does not know the order, then the result says so and nothing changed', async () => {
    const orderId = await pendingOrder('CKUNKNOWN');
    const res = await check(orderId);
    expect(res.status).toBe(502);
    expect(textOf(res.text)).toContain('the payment service does not know this order');
    expect(textOf(res.text)).toContain('Nothing: no status was recorded');
  });

  it('When the payment service cannot be reached, then the result says so, that nothing changed, the status now and the next check; the order counts the check and the board names the API', async () => {
    const orderId = await pendingOrder('CKDOWN');
    const before = await notificationsOf(orderId);
    await double.stop();
    const res = await check(orderId);
    expect(res.status).toBe(503);
    const said = textOf(res.text);
    expect(res.text).toContain('data-outcome="not_done"');
    expect(said).toMatch(/What failed the service could not reach the payment service: no connection \(\d tries\)/);
    expect(said).toContain('What changed Nothing: no status was recorded and no event was written.');
    expect(said).toMatch(/The order now Payment in progress \(PENDING\) since \d+ \w+ \d{4}, \d\d:\d\d:\d\d CES?T/);
    expect(said).toMatch(/Next automatic check about \d+ \w+ \d{4}, .* 1 h after its last news \(RECONCILE_AFTER\)/);
    expect(await notificationsOf(orderId)).toBe(before);
    const page = textOf((await get(`/console/orders/${orderId}`)).text);
    expect(page).toMatch(/Checks asked for by people 1; the last .* by olga: could not reach the payment service/);
    const line = boardLine((await get('/console/attention')).text, `payment-api-${POS_ID}`);
    expect(line).toContain('data-severity="critical"');
    expect(textOf(line)).toContain(`The payment service cannot be reached for shop account ${POS_ID}`);
    expect(textOf(line)).toContain('there is no connection to it');
  });
});
