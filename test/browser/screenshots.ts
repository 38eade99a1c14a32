/**
 * `npm run screenshots`: the console's main pages as support staff see them, into docs/console/*.png (shown in the
 * README's section for support staff). Not a test, and no test runs it: it rewrites tracked files.
 *
 * The real service on a database of its own, with reconciliation against the payment-service double, is sent a few
 * orders' real signed notifications (a payment of 2,234.71 PLN with two refunds, an order repaired by reconciliation,
 * a conflict, a payment waiting for the shop's confirmation, an unreadable body), in the Europe/Warsaw zone; an operator
 * signs in through the form, checks one order with the payment service through its confirmation and another while the
 * payment service cannot be reached, and each page is photographed in Debian's chromium (test/support/browser.ts).
 */
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { PaymentServiceDouble, type DoubleClient } from '../../src/simulator';
import { admin, startService, stop } from '../benchmark/receivers';
import { KEY, PG, ROOT } from '../benchmark/options';
import { AMQP_URL, deleteExchange, uniqueExchange } from '../support/broker';
import { launchChromium, watchedContext } from '../support/browser';
import { CONSOLE_ENV, OPERATOR_TOKEN } from '../support/console';
import { orderBody, POS_ID, refundBody, sign } from '../support/signing';

const OUT = path.join(ROOT, 'docs', 'console');
const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-4c1f0e2b9d7a' };
const BUYER = { email: 'anna.nowak@example.com', firstName: 'Anna', lastName: 'Nowak', phone: '+48 600 100 200' };

/** The built service (dist/main.js), started as the benchmark starts it. */
interface Running {
  publicUrl: string;
  adminUrl: string;
}

async function send(svc: Running, body: string): Promise<void> {
  const res = await fetch(`${svc.publicUrl}/notifications`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json;charset=UTF-8', 'OpenSvc-Signature': sign(body, KEY) },
    body,
  });
  if (res.status !== 200) throw new Error(`a notification was answered ${res.status}`);
}

/** The orders of the pictures; ids that read like a shop's. */
async function history(
  svc: Running,
  double: PaymentServiceDouble,
): Promise<{ paid: string; repaired: string; unanswered: string; conflict: string; waiting: string }> {
  const paid = 'WZ1K9Q7L3T261127GUEST000001';
  const extOrderId = 'shop-2026-11-27-0042';
  const amount = { totalAmount: '223471' };
  await send(svc, orderBody({ orderId: paid, extOrderId, status: 'PENDING', ...amount }));
  await send(
    svc,
    orderBody({ orderId: paid, extOrderId, status: 'WAITING_FOR_CONFIRMATION', paymentId: '5011', ...amount }),
  );
  const completed = orderBody({
    orderId: paid,
    extOrderId,
    status: 'COMPLETED',
    paymentId: '5011',
    payMethodType: 'PBL',
    buyer: BUYER,
    ...amount,
  });
  await send(svc, completed);
  await send(svc, completed); // a repeat
  for (const [refundId, extRefundId] of [
    ['912873', 'ret-0042'],
    ['912874', 'ret-0043'],
  ] as const) {
    const refund = { orderId: paid, extOrderId, refundId, extRefundId, amount: '28013' };
    await send(svc, refundBody({ ...refund, status: 'PENDING' }));
    await send(svc, refundBody({ ...refund, status: 'FINALIZED' }));
  }

  // Its COMPLETED was never delivered: the payment API knows it, reconciliation repairs it.
  const repaired = 'BX4N2M8P0D261127GUEST000002';
  await send(svc, orderBody({ orderId: repaired, extOrderId: 'shop-2026-11-27-0043', status: 'PENDING' }));
  double.setOrder({
    orderId: repaired,
    extOrderId: 'shop-2026-11-27-0043',
    merchantPosId: POS_ID,
    status: 'COMPLETED',
    paymentId: '5012',
    payMethodType: 'CARD_TOKEN',
  });

  // The shop's first attempt at the same order, abandoned: its extOrderId finds both.
  await send(svc, orderBody({ orderId: 'EA6H3J5K7L261127GUEST000004', extOrderId, status: 'CANCELED' }));

  // A conflict: canceled after completed.
  const conflict = 'CQ7T5R1S9V261127GUEST000003';
  await send(svc, orderBody({ orderId: conflict, extOrderId: 'shop-2026-11-27-0044', status: 'COMPLETED' }));
  await send(svc, orderBody({ orderId: conflict, extOrderId: 'shop-2026-11-27-0044', status: 'CANCELED' }));
  // A payment waiting for the shop's confirmation (auto-receive off).
  const waiting = 'FW2G8H4J6K261127GUEST000005';
  await send(
    svc,
    orderBody({
      orderId: waiting,
      extOrderId: 'shop-2026-11-27-0045',
      status: 'WAITING_FOR_CONFIRMATION',
      paymentId: '5013',
      totalAmount: '45990',
    }),
  );
  // A payment still in progress, which a check will fail to learn about.
  const unanswered = 'GM5N1P3Q7R261127GUEST000006';
  await send(svc, orderBody({ orderId: unanswered, extOrderId: 'shop-2026-11-27-0046', status: 'PENDING' }));
  // An authentic body that cannot be read: quarantined.
  await send(svc, '{"order": {"orderId": "DL0UNREADABLE", "status": ');
  return { paid, repaired, unanswered, conflict, waiting };
}

async function shoot(page: Page, name: string, target: string, fullPage = false): Promise<void> {
  if (page.url() !== target) await page.goto(target);
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage });
  process.stdout.write(`docs/console/${name}.png\n`);
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const double = new PaymentServiceDouble({ clients: [POS] });
  await double.start();
  const database = `nr_screenshots_${randomBytes(4).toString('hex')}`;
  const exchange = uniqueExchange();
  // A queue bound to the exchange, as a consumer's would be: else needs attention lists every event as unrouted.
  const broker = await amqp.connect(AMQP_URL);
  const channel = await broker.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, '#');
  const service = await startService(
    `${PG}/${database}`,
    exchange,
    { unavailable: 'not measured' },
    {
      env: {
        ...CONSOLE_ENV,
        PAYMENT_API_URL: double.url,
        // The double, on this machine, in clear (production mode refuses http:// otherwise).
        PAYMENT_API_ALLOW_HTTP: 'true',
        PAYMENT_API_CREDENTIALS: `${POS.posId}:${POS.clientId}:${POS.clientSecret}`,
        RECONCILE_AFTER: '1h',
        RECONCILE_INTERVAL: '1h',
        CONSOLE_TIME_ZONE: 'Europe/Warsaw',
        CONSOLE_CONFIRM_WITHIN: '5d',
      },
    },
  );
  const svc: Running = {
    publicUrl: `http://127.0.0.1:${service.port}`,
    adminUrl: `http://127.0.0.1:${service.adminPort}`,
  };
  const browser = await launchChromium();
  try {
    const { paid, repaired, unanswered, conflict, waiting } = await history(svc, double);
    // The relay publishes what the notifications wrote (NOTIFY), before the pictures are taken.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const { context, problems } = await watchedContext(browser, { viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const url = (p: string): string => `${svc.adminUrl}${p}`;

    await shoot(page, 'sign-in', url('/console/sign-in'));
    await page.locator('input[name="token"]').fill(OPERATOR_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(url('/console'));

    await page.goto(url(`/console/orders/${repaired}/reconcile`));
    await shoot(page, 'reconcile-confirmation', page.url());
    await page.getByRole('button', { name: /^Confirm/ }).click();
    await page.getByTestId('result').waitFor();
    await shoot(page, 'reconcile-result', page.url());

    // The payment service cuts every connection: a check cannot reach it, and needs attention says so.
    await page.goto(url(`/console/orders/${unanswered}/reconcile`));
    double.injectFaults({ reset: true, times: 50 });
    await page.getByRole('button', { name: /^Confirm/ }).click();
    await page.getByTestId('result').waitFor();
    double.clearFaults();
    await shoot(page, 'reconcile-failed', page.url());

    await shoot(page, 'overview', url('/console'), true);
    await shoot(page, 'order', url(`/console/orders/${paid}`), true);
    await shoot(page, 'order-repaired', url(`/console/orders/${repaired}`), true);
    await shoot(page, 'order-contradicted', url(`/console/orders/${conflict}`), true);
    await shoot(page, 'order-waiting', url(`/console/orders/${waiting}`), true);
    await shoot(page, 'attention', url('/console/attention'), true);
    await shoot(page, 'deliveries', url('/console/deliveries'), true);
    await shoot(page, 'audit', url('/console/audit'), true);
    await shoot(page, 'glossary', url('/console/glossary'), true);
    await shoot(page, 'export', url(`/console/export?pos=${POS_ID}`), true);
    await page.goto(url('/console/search?q=shop-2026-11-27-0042'));
    await shoot(page, 'search', page.url(), true);
    await context.close();
    if (problems.csp.length + problems.dialogs.length + problems.errors.length > 0)
      throw new Error(`the pages reported problems: ${JSON.stringify(problems)}`);
  } finally {
    await browser.close();
    await stop(service.child);
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await broker.close();
    await deleteExchange(exchange);
    await double.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `screenshots failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
