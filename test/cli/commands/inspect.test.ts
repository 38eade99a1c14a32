import { createHash } from 'node:crypto';
import { REDACTED } from '../../../src/domain/personalData';
import { fingerprintKey } from '../../../src/verification/secondKeys';
import { EventConsumer } from '../../support/broker';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, POS_ID, refundBody, SECOND_KEY, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';
import { cliEnv, parseJson, runCli } from '../cliSupport';
import { allPublished, holdEvents } from '../../support/outbox';

interface Inspection {
  projection: Record<string, unknown> | null;
  refunds: Array<Record<string, unknown>>;
  notifications: Array<{
    id: string;
    kind: string;
    status: string;
    outcome: string;
    bodySha256: string;
    bodyBytes: number | null;
    variants: Array<{ bodySha256: string }>;
    deliveries: Array<{
      sourceAddress: string;
      posId: string;
      keyFingerprint: string;
      processingTimeMs: number | null;
      outcome: string;
      bodySha256: string;
    }>;
    body?: string;
  }>;
  events: Array<{
    type: string;
    published: boolean;
    unroutedAt: string | null;
    attempts: number;
    lastError: string | null;
    status: string;
    previousStatus: string | null;
    notificationId: string;
  }>;
}

const BUYER = {
  customerId: 'guest',
  email: 'jan.kowalski@example.com',
  firstName: 'Jan',
  lastName: 'Kowalski',
  language: 'pl',
};
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

let svc: TestService;
let consumer: EventConsumer;
let env: Record<string, string>;
const orderId = uniqueId('INSP');
const refundId = uniqueId('R');
const pending = orderBody({ orderId, status: 'PENDING', paymentId: '9001' });
const completed = orderBody({
  orderId,
  status: 'COMPLETED',
  paymentId: '9001',
  payMethodType: 'CARD_TOKEN',
  buyer: BUYER,
  localReceiptDateTime: '2026-11-22T10:25:40.528+01:00',
});

beforeAll(async () => {
  svc = await startTestService();
  // Only order events have a queue: the refund event is returned by the broker, published as unrouted.
  consumer = await new EventConsumer(svc.exchange, 'order.*').start();
  env = cliEnv({ DATABASE_URL: svc.database.url });
  expect((await svc.post(pending)).body.outcome).toBe('accepted');
  expect((await svc.post(pending)).body.outcome).toBe('duplicate');
  // Same meaning, other bytes: a variant.
  const variant = JSON.stringify({ ...JSON.parse(pending), extra: 'field' });
  expect((await svc.post(variant)).body.outcome).toBe('duplicate');
  expect((await svc.post(completed, { 'Svc-Processing-Time': '215' })).body.outcome).toBe('accepted');
  expect((await svc.post(refundBody({ orderId, refundId, status: 'FINALIZED', amount: '5000' }))).body.outcome).toBe(
    'accepted',
  );
  await consumer.waitFor(2);
  await waitUntil(
    'the refund event to be published as unrouted',
    async () =>
      (
        await query<{ unrouted: boolean }>(
          svc.database.url,
          `SELECT unrouted_at IS NOT NULL AS unrouted FROM outbox_events WHERE order_id = $1 AND type = 'refund.finalized'`,
          [orderId],
        )
      )[0]?.unrouted,
    15_000,
  );
}, 180_000);
afterAll(async () => {
  await svc.stop();
  await consumer.stop(); // last: it throws when an event did not match the contract
});

describe('inspect', () => {
  it('When an order is inspected, then its projection, notifications with variants and deliveries, and events with their publication state are shown', async () => {
    const run = await runCli(['inspect', 'order', orderId, '--json'], env);
    expect(run.code).toBe(0);
    const result = parseJson<Inspection>(run);
    expect(result.projection).toMatchObject({
      orderId,
      status: 'COMPLETED',
      payMethodType: 'CARD_TOKEN',
      paymentId: '9001',
      totalAmount: '15000',
    });
    expect(result.refunds).toEqual([expect.objectContaining({ refundId, status: 'FINALIZED', amount: '5000' })]);
    expect(result.notifications.map((n) => `${n.kind} ${n.status} ${n.outcome}`)).toEqual([
      'order PENDING applied',
      'order COMPLETED applied',
      'refund FINALIZED applied',
    ]);

    const [first, second] = result.notifications;
    expect(first?.bodySha256).toBe(sha256(pending));
    expect(first?.bodyBytes).toBe(Buffer.byteLength(pending));
    expect(first?.variants).toHaveLength(1);
    expect(first?.deliveries.map((d) => d.outcome)).toEqual(['accepted', 'duplicate', 'duplicate']);
    for (const d of result.notifications.flatMap((n) => n.deliveries)) {
      expect(d).toMatchObject({
        sourceAddress: '127.0.0.1',
        posId: POS_ID,
        keyFingerprint: fingerprintKey(SECOND_KEY),
      });
    }
    expect(second?.deliveries).toEqual([
      expect.objectContaining({ processingTimeMs: 215, outcome: 'accepted', bodySha256: sha256(completed) }),
    ]);

    expect(result.events.map((e) => [e.type, e.previousStatus, e.status, e.published])).toEqual([
      ['order.pending', null, 'PENDING', true],
      ['order.completed', 'PENDING', 'COMPLETED', true],
      ['refund.finalized', null, 'FINALIZED', true],
    ]);
    expect(result.events.map((e) => e.unroutedAt !== null)).toEqual([false, false, true]);
    expect(result.events[1]?.notificationId).toBe(second?.id);
  });

  it('When an order is inspected, then neither the raw body nor the buyer data appears, in either output form', async () => {
    for (const args of [['--json'], []]) {
      const run = await runCli(['inspect', 'order', orderId, ...args], env);
      expect(run.code).toBe(0);
      for (const secret of [BUYER.email, BUYER.lastName, '"products"', SECOND_KEY])
        expect(run.stdout).not.toContain(secret);
    }
  });

  it('When the human form is asked for, then it lists the deliveries, the variant and the unrouted event', async () => {
    const run = await runCli(['inspect', 'order', orderId], env);
    expect(run.stdout).toMatch(/Order \S+:\n\s+orderId\s+\S+/);
    expect(run.stdout).toMatch(/delivery #\d+ .* from 127\.0\.0\.1 .* Svc-Processing-Time 215 ms +accepted/);
    expect(run.stdout).toMatch(/variant [0-9a-f]{16} \d+ B/);
    expect(run.stdout).toMatch(
      /refund\.finalized \S+ .* published \d{4}-\S+ \(unrouted: no queue was bound for its routing key\)/,
    );
    expect(run.stdout).toMatch(/order\.completed .* published \d{4}-/);
  });

  it('When an event waits after failed attempts, then the human form says it is not published, with its last error', async () => {
    const waiting = uniqueId('INSPW');
    expect((await svc.post(orderBody({ orderId: waiting, status: 'PENDING' }))).body.outcome).toBe('accepted');
    await waitUntil('the event published', () => allPublished(svc.database.url, waiting));
    // As the relay leaves an event the broker nacked: held, attempted, its next attempt later.
    await holdEvents(svc.database.url, waiting, 2, 'nack: queue full');
    const run = await runCli(['inspect', 'order', waiting], env);
    expect(run.stdout).toMatch(
      /order\.pending .* NOT PUBLISHED \(2 failed attempt\(s\), last error: nack: queue full, next /,
    );
  });

  it('When --show-bodies is given, then the stored bodies are shown with every field but ids, amounts, statuses and dates redacted', async () => {
    const run = await runCli(['inspect', 'order', orderId, '--show-bodies', '--json'], env);
    const result = parseJson<Inspection>(run);
    const body = JSON.parse(result.notifications[1]?.body ?? 'null') as { order: Record<string, unknown> };
    expect(body.order).toMatchObject({
      orderId,
      status: 'COMPLETED',
      totalAmount: '15000',
      buyer: REDACTED,
      customerIp: REDACTED,
      description: REDACTED,
      products: REDACTED,
    });
    expect(run.stdout).not.toContain(BUYER.email);
  });

  it('When a refund is inspected, then only the refund, its notification and its own events are shown', async () => {
    const run = await runCli(['inspect', 'refund', refundId, '--json'], env);
    expect(run.code).toBe(0);
    const result = parseJson<Inspection & { orderId: string }>(run);
    expect(result.orderId).toBe(orderId);
    expect(result.projection).toMatchObject({
      refundId,
      orderId,
      status: 'FINALIZED',
      amount: '5000',
      reason: 'refund',
    });
    expect(result.notifications.map((n) => `${n.kind} ${n.status}`)).toEqual(['refund FINALIZED']);
    expect(result.events.map((e) => e.type)).toEqual(['refund.finalized']);
  });

  it('When nothing is recorded under the id, then it says so and exits 1', async () => {
    const order = await runCli(['inspect', 'order', 'NO-SUCH-ORDER'], env);
    expect(order.code).toBe(1);
    expect(order.stderr).toContain('no order NO-SUCH-ORDER');
    const refund = await runCli(['inspect', 'refund', 'NO-SUCH-REFUND', '--json'], env);
    expect(refund.code).toBe(1);
  });
});

describe('inspect: disagreements and replays', () => {
  it('When a notification disagreed with recorded facts and another was replayed past the audit limit, then inspect shows both', async () => {
    const disputed = uniqueId('INSPD');
    await svc.post(orderBody({ orderId: disputed, status: 'PENDING' })).expect(200);
    await svc.post(orderBody({ orderId: disputed, status: 'COMPLETED', totalAmount: '1' })).expect(200);
    const replayed = orderBody({ orderId: disputed, status: 'PENDING' });
    for (let i = 0; i < 104; i++) await svc.post(replayed).expect(200);

    const json = parseJson<{
      notifications: Array<{
        status: string;
        disagreements: unknown[];
        deliveries: unknown[];
        repeatedDeliveries: { count: number } | null;
      }>;
    }>(await runCli(['inspect', 'order', disputed, '--json'], env));
    const [pendingOne, completedOne] = json.notifications;
    expect(completedOne?.disagreements).toEqual([{ field: 'totalAmount', kept: '15000', received: '1' }]);
    expect(pendingOne?.deliveries).toHaveLength(100);
    expect(pendingOne?.repeatedDeliveries?.count).toBe(5);

    const human = await runCli(['inspect', 'order', disputed], env);
    expect(human.stdout).toContain('disagrees: totalAmount 1 (kept 15000)');
    expect(human.stdout).toMatch(/and 5 more deliveries \(counted, not listed\) from \d{4}-/);
  });
});
