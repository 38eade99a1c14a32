/**
 * The console in a real browser (Debian's chromium through playwright-core, test/support/browser.ts): the real
 * service on free ports with reconciliation against the payment-service double, real signed notifications, and
 * people signed in through the form. What a browser alone can tell: the flows work with and without JavaScript,
 * a form posted from another site is refused, the Content-Security-Policy is never violated, axe-core finds no
 * serious accessibility problem, and what a notification carries never executes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { PaymentServiceDouble, writeOrderNotification, type DoubleClient } from '../../src/simulator';
import { accessibilityProblems, launchChromium, watchedContext, type PageProblems } from '../support/browser';
import { CONSOLE_ENV, OPERATOR_TOKEN, VIEWER_TOKEN } from '../support/console';
import { query } from '../support/database';
import { waitUntil } from '../support/wait';
import { startTestService, type TestService } from '../support/service';
import { orderBody, POS_ID, uniqueId } from '../support/signing';

// A browser on a machine shared with other test runs: pages take their time.
jest.setTimeout(120_000);

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-4c1f0e2b9d7a' };
/** Where the other site's page is served from: another loopback address, so another site to the browser. */
const OTHER_SITE = '127.0.0.2';

let double: PaymentServiceDouble;
let svc: TestService;
let browser: Browser;

beforeAll(async () => {
  double = new PaymentServiceDouble({ clients: [POS] });
  await double.start();
  svc = await startTestService({
    env: {
      ...CONSOLE_ENV,
      PAYMENT_API_URL: double.url,
      PAYMENT_API_CREDENTIALS: `${POS.posId}:${POS.clientId}:${POS.clientSecret}`,
      // Only the console's action checks an order here: the sweep waits an hour.
      RECONCILE_AFTER: '1h',
      RECONCILE_INTERVAL: '1h',
    },
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await double?.stop();
});

const url = (path: string): string => `${svc.adminUrl}${path}`;

/** A PENDING order the payment API knows as COMPLETED: what reconciliation repairs. */
async function pendingOrder(prefix: string): Promise<{ orderId: string; extOrderId: string }> {
  const orderId = uniqueId(prefix);
  const extOrderId = `shop-${orderId.toLowerCase()}`;
  expect((await svc.post(orderBody({ orderId, extOrderId, status: 'PENDING' }))).status).toBe(200);
  double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: `${Date.now() % 1e9}` });
  return { orderId, extOrderId };
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(url('/console/sign-in'));
  await page.locator('input[name="token"]').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(url('/console'));
}

async function auditRows(orderId: string): Promise<Array<{ actor: string; role: string; action: string }>> {
  return query(svc.database.url, 'SELECT actor, role, action FROM console_audit WHERE order_id = $1 ORDER BY id', [
    orderId,
  ]);
}

const noProblems: PageProblems = { csp: [], dialogs: [], errors: [] };

describe.each([
  ['with JavaScript', true],
  ['without JavaScript', false],
])('An operator %s', (_title, javaScriptEnabled) => {
  it('When they sign in, search an order by its extOrderId, read its timeline and reconcile it with confirmation, then the repaired status and the audit row show', async () => {
    const { orderId, extOrderId } = await pendingOrder(javaScriptEnabled ? 'BRJS' : 'BRNOJS');
    const { context, problems } = await watchedContext(browser, { javaScriptEnabled });
    try {
      const page = await context.newPage();
      await signIn(page, OPERATOR_TOKEN);

      await page.getByTestId('search').locator('input[name="q"]').fill(extOrderId);
      await page.getByTestId('search').getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(url(`/console/orders/${orderId}`));
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain(orderId);
      const timeline = page.getByTestId('timeline');
      await expect(timeline.textContent()).resolves.toContain('PENDING');
      // Times are UTC whatever the browser's zone, in <time> elements.
      const times = await timeline.locator('time').all();
      expect(times.length).toBeGreaterThan(0);
      for (const time of times) {
        const datetime = (await time.getAttribute('datetime')) ?? '';
        expect(datetime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(await time.textContent()).toContain(`${datetime.slice(11, 19)} UTC`);
      }

      await page.getByRole('link', { name: /^Reconcile this order now/ }).click();
      await page.waitForURL(url(`/console/orders/${orderId}/reconcile`));
      expect(await auditRows(orderId)).toEqual([]); // the confirmation page does nothing
      await page.getByRole('button', { name: /^Confirm/ }).click();
      await expect(page.getByTestId('result').textContent()).resolves.toMatch(/Result: \S+/);

      await page.goto(url(`/console/orders/${orderId}`));
      await expect(page.getByTestId('timeline').textContent()).resolves.toMatch(/COMPLETED[\s\S]*via reconciliation/);
      const audit = page.getByTestId('audit');
      await expect(audit.textContent()).resolves.toMatch(/olga[\s\S]*operator[\s\S]*reconcile/);
      expect(await auditRows(orderId)).toEqual([{ actor: 'olga', role: 'operator', action: 'reconcile' }]);

      await page.goto(url('/console/audit'));
      await expect(page.getByTestId('audit').textContent()).resolves.toContain(orderId);
      expect(problems).toEqual(noProblems);
    } finally {
      await context.close();
    }
  });
});

it('When a viewer reads an order, then it offers no action, and an action they post anyway is refused and not done', async () => {
  const { orderId } = await pendingOrder('BRVIEW');
  const ordersAsked = double.count('order');
  const { context, problems } = await watchedContext(browser);
  try {
    const page = await context.newPage();
    await signIn(page, VIEWER_TOKEN);
    await page.goto(url(`/console/orders/${orderId}`));
    await expect(page.getByTestId('timeline').textContent()).resolves.toContain('PENDING');
    expect(await page.getByRole('link', { name: /Reconcile|Re-publish/ }).count()).toBe(0);

    const confirmation = await page.goto(url(`/console/orders/${orderId}/reconcile`));
    expect(confirmation?.status()).toBe(403);
    expect(await page.getByRole('button', { name: /^Confirm/ }).count()).toBe(0);

    // The form an operator would get, posted from the console's own page: same origin, the viewer's cookie.
    const posted = page.waitForResponse((r) => r.request().method() === 'POST');
    // Page code as text: the project is compiled without the DOM's types.
    await page.evaluate(`(() => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = '/console/orders/${orderId}/reconcile';
      form.innerHTML = '<input type="hidden" name="confirm" value="yes">';
      document.body.append(form);
      form.submit();
    })()`);
    const answer = await posted;
    expect(answer.status()).toBe(403);
    expect((await answer.request().allHeaders())['sec-fetch-site']).toBe('same-origin');
    await page.waitForLoadState();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toMatch(/Operators only/);
    expect(double.count('order')).toBe(ordersAsked);
    expect(await auditRows(orderId)).toEqual([]);
    expect(problems).toEqual(noProblems);
  } finally {
    await context.close();
  }
});

it('When a page of another site auto-submits a confirmed action to the console of a signed-in operator, then it is refused and nothing is done', async () => {
  const { orderId } = await pendingOrder('BRCSRF');
  const ordersAsked = double.count('order');
  const target = url(`/console/orders/${orderId}/reconcile`);
  const otherSite = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><title>Win a prize</title><form method="post" action="${target}">` +
        `<input type="hidden" name="confirm" value="yes"></form><script>document.forms[0].submit()</script>`,
    );
  });
  await new Promise<void>((resolve) => otherSite.listen(0, OTHER_SITE, resolve));
  const { context } = await watchedContext(browser);
  try {
    const page = await context.newPage();
    await signIn(page, OPERATOR_TOKEN);
    const posted = page.waitForResponse((r) => r.url() === target && r.request().method() === 'POST');
    await page.goto(`http://${OTHER_SITE}:${(otherSite.address() as AddressInfo).port}/`);
    const answer = await posted;
    expect((await answer.request().allHeaders())['sec-fetch-site']).toBe('cross-site');
    expect(answer.status()).toBe(403);
    expect(double.count('order')).toBe(ordersAsked);
    expect(await auditRows(orderId)).toEqual([]);
    // The operator's session is still good on the console's own pages.
    await page.goto(url(`/console/orders/${orderId}`));
    await expect(page.getByTestId('timeline').textContent()).resolves.toContain('PENDING');
  } finally {
    await context.close();
    await new Promise((resolve) => otherSite.close(resolve));
  }
});

/** Values a notification may carry that would run, navigate or break the layout if a page trusted them. */
const HOSTILE = {
  // Single quotes inside: the readable body view shows JSON, which would escape double ones.
  script: "<script>window.pwned='script';alert(1)</script>",
  image: "<img src=x onerror=window.pwned='img';alert(2)>",
  url: "javascript:window.pwned='href';alert(3)",
  html: '</td></tr></table><h1>Forged heading</h1><a href="javascript:alert(4)">click</a>',
  unicode: `${'Zażółć gęślą jaźń ✓ 注文 مرحبا 🧾\u202e'.repeat(60)}end`,
};

it('When notifications carry scripts, javascript: URLs, HTML and long unicode, then no page runs or links them, and each still reads', async () => {
  const orderId = uniqueId('BRXSS');
  const extOrderId = HOSTILE.url;
  const order = {
    orderId,
    extOrderId,
    orderCreateDate: '2026-11-01T10:00:00.000+01:00',
    notifyUrl: 'https://shop.example/notifications',
    customerIp: '127.0.0.1',
    merchantPosId: POS_ID,
    description: `${HOSTILE.html} ${HOSTILE.unicode}`,
    currencyCode: 'PLN',
    totalAmount: '15000',
    products: [{ name: HOSTILE.script, unitPrice: '15000', quantity: '1' }],
  };
  const body = writeOrderNotification(order, {
    status: 'COMPLETED',
    buyer: { email: 'buyer@example.com', firstName: HOSTILE.image, lastName: HOSTILE.unicode },
    payMethod: { type: 'PBL' },
    paymentId: '7700',
  });
  expect((await svc.post(body)).status).toBe(200);
  // An authentic body that cannot be read is quarantined, and shown on the needs-attention page.
  expect((await svc.post(`{"order": "${HOSTILE.script}"`)).status).toBe(200);

  const { context, problems } = await watchedContext(browser);
  try {
    const page = await context.newPage();
    await signIn(page, OPERATOR_TOKEN);
    await page.goto(url(`/console/search?q=${encodeURIComponent(extOrderId)}`));
    await page.waitForURL(url(`/console/orders/${orderId}`));
    for (const path of [`/console/orders/${orderId}`, '/console/attention', '/console/deliveries', '/console']) {
      if (page.url() !== url(path)) await page.goto(url(path));
      for (const details of await page.locator('details').all()) await details.locator('summary').click();
      expect([path, await page.evaluate<unknown>('window.pwned')]).toEqual([path, undefined]);
      // Every link stays on the console: no value of a notification is ever in a URL's scheme position.
      const links = await Promise.all(
        (await page.locator('a[href]').all()).map(async (a) => (await a.getAttribute('href')) ?? ''),
      );
      const away = links.filter((link) => !new URL(link, svc.adminUrl).href.startsWith(`${svc.adminUrl}/console`));
      expect([path, away]).toEqual([path, []]);
      expect(await page.locator('main h1').count()).toBe(1);
      expect(await page.locator('script, img, iframe, object, embed').count()).toBe(0);
    }
    await page.goto(url(`/console/orders/${orderId}`));
    // Shown as the text it is (the page's text is long: say which is missing, not all of it).
    const text = (await page.locator('main').textContent()) ?? '';
    const missing = [HOSTILE.script, HOSTILE.image, HOSTILE.url, 'Zażółć gęślą jaźń ✓ 注文'].filter(
      (v) => !text.includes(v),
    );
    expect(missing).toEqual([]);
    await expect(page.getByRole('heading', { level: 2, name: 'Timeline' }).isVisible()).resolves.toBe(true);
    await page.goto(url('/console/attention'));
    await expect(page.getByTestId('attention').textContent()).resolves.toMatch(/Quarantined/);
    expect(problems).toEqual(noProblems);
  } finally {
    await context.close();
  }
});

describe('Every page', () => {
  let page: Page;
  let problems: PageProblems;
  let closeContext: () => Promise<void>;
  let orderId: string;

  beforeAll(async () => {
    ({ orderId } = await pendingOrder('BRPAGE'));
    const watched = await watchedContext(browser);
    problems = watched.problems;
    closeContext = () => watched.context.close();
    page = await watched.context.newPage();
  });
  afterAll(() => closeContext());

  /** Each page a person reaches, with the status it answers. */
  const pages = (): Array<[string, number]> => [
    ['/console/sign-in', 200],
    ['/console', 200],
    ['/console/attention', 200],
    ['/console/deliveries', 200],
    ['/console/deliveries?outcome=nonsense', 400],
    ['/console/audit', 200],
    [`/console/orders/${orderId}`, 200],
    [`/console/orders/${orderId}/reconcile`, 200],
    [`/console/orders/${orderId}/republish`, 200],
    ['/console/quarantine/retry', 200],
    ['/console/search?q=NO-SUCH-ORDER-ANYWHERE', 404],
    ['/console/no-such-page', 404],
  ];

  it('When each page is opened by an operator, then it violates no Content-Security-Policy directive and axe-core finds no serious or critical problem', async () => {
    // The sign-in page first, signed out; then every other page signed in.
    const [signInPage, ...others] = pages();
    const checked: Record<string, string[]> = {};
    for (const [path, status] of [signInPage as [string, number]]) {
      expect((await page.goto(url(path)))?.status()).toBe(status);
      checked[path] = await accessibilityProblems(page);
    }
    await signIn(page, OPERATOR_TOKEN);
    for (const [path, status] of others) {
      expect([path, (await page.goto(url(path)))?.status()]).toEqual([path, status]);
      checked[path] = await accessibilityProblems(page);
    }
    expect(Object.entries(checked).filter(([, found]) => found.length > 0)).toEqual([]);
    expect(problems).toEqual(noProblems);
  });

  it('When a page is framed by another site, then the browser refuses to show it', async () => {
    const frame = await page.goto('about:blank').then(async () => {
      await page.setContent(`<iframe src="${url('/console')}"></iframe>`);
      return page.frames()[1];
    });
    // frame-ancestors 'none': the frame stays empty (chrome-error), never the console.
    expect(
      await frame
        ?.locator('main')
        .count()
        .catch(() => 0),
    ).toBe(0);
    // Chromium reports no console message for a refused frame here; the watcher is proven below instead.
  });

  it('When a script is added inline to a page, then the policy refuses it and the watcher reports the violation', async () => {
    await signIn(page, OPERATOR_TOKEN);
    await page.goto(url('/console'));
    // A string, evaluated in the page (the tests compile without the DOM's types).
    await page.evaluate(
      "const script = document.createElement('script'); script.textContent = 'document.body.dataset.inline = 1'; document.body.append(script)",
    );
    await waitUntil('the script-src violation reported', () => /script-src/.test(problems.csp.join('\n')));
    expect(await page.evaluate('document.body.dataset.inline ?? null')).toBeNull();
    problems.csp.length = 0;
  });
});
