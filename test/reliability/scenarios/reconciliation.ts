import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator/paymentServiceDouble';
import { pick, seededRandom, type Random } from '../../../src/simulator/random';
import { EventConsumer } from '../../support/broker';
import { OTHER_POS_ID, POS_ID, uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, pool, postNotification } from '../support/http';
import { sleep } from '../../support/wait';
import {
  lifecycle,
  type ModelNotification,
  type OrderPlan,
  type PayMethod,
  type RefundPlan,
} from '../support/lifecycleModel';
import { harness, seconds } from '../support/scenario';
import { secrets } from '../support/secrets';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations } from '../support/store';
import { checkEvents, type CloudEventBody } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

const ORDERS = 200;
const DROP = 0.3;
const LANES = 8;
/** Long enough for the widening schedule's first checks after the last notification (1 s, 2 s, 4 s, ...). */
const CONVERGE_MS = 60_000;

const CLIENTS: DoubleClient[] = [
  { posId: POS_ID, clientId: `${POS_ID}-client`, clientSecret: 'Cs-4d1f9b7e2a-reconcile-secret' },
  { posId: OTHER_POS_ID, clientId: `${OTHER_POS_ID}-client`, clientSecret: 'Cs-8e2c6a1f5b-reconcile-secret' },
];

export const RECONCILIATION: ScenarioDefinition = {
  id: 10,
  title: 'Lost notifications repaired by reconciliation',
  done:
    `${ORDERS} orders through their lifecycles (hosted, card or code-based payment; auto-receive on or off; completed or ` +
    'canceled; up to two refunds, some with PENDING, finalized or canceled), each status told to the payment-service double ' +
    `as it happens; ${DROP * 100} % of all the notifications lost for good, chosen at random among those that may be (never the first of an order or of a refund: ` +
    'what the service never heard of it cannot ask about), 8 orders at a time, 10 % of the delivered ones sent twice. The ' +
    'service runs with PAYMENT_API_URL on the double, RECONCILE_AFTER 1 s and RECONCILE_INTERVAL 250 ms. Compared with the ' +
    'reference: every projection and refund, and the events a consumer sees.',
};

function plan(random: Random): OrderPlan {
  const refunds: RefundPlan[] = Array.from({ length: pick(random, [0, 0, 1, 2]) }, () => ({
    full: random() < 0.5,
    withPending: random() < 0.5,
    final: pick(random, ['FINALIZED', 'FINALIZED', 'CANCELED'] as const),
  }));
  return {
    pay: pick<PayMethod>(random, ['hosted', 'card', 'code']),
    autoReceive: random() < 0.5,
    outcome: random() < 0.75 ? 'completed' : 'canceled',
    // A second attempt's PENDING and CANCELED concern a payment, not the order: the API keeps showing COMPLETED.
    secondAttempt: false,
    refunds,
    copies: [1],
    reserialized: [false],
    parallel: [false],
    delays: [0],
    disorder: 0,
  };
}

interface Expected {
  status: string;
  paymentId: string | null;
  totalAmount: string | null;
  refunds: Map<string, string>;
}

/** What the projections must end as: every status told, lost or not. */
function expectedOf(notes: readonly ModelNotification[]): Expected {
  const orderNotes = notes.filter((n) => n.kind === 'order');
  const last = orderNotes[orderNotes.length - 1] as ModelNotification;
  const refunds = new Map<string, string>();
  for (const n of notes) if (n.kind === 'refund' && n.refundId) refunds.set(n.refundId, n.status);
  return {
    status: last.status,
    paymentId: [...orderNotes].reverse().find((n) => n.fields.paymentId)?.fields.paymentId ?? null,
    totalAmount: last.fields.totalAmount ?? null,
    refunds,
  };
}

interface OrderView {
  status: string;
  paymentId: string | null;
  totalAmount: string | null;
  refunds: Array<{ refundId: string; status: string }>;
}

/** The sum of a counter's samples in a /metrics text, over the label sets that match. */
function counterSum(metrics: string, name: string, labels = ''): number {
  return metrics
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => line.includes(labels))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

export function reconciliationScenario(report: RunReport): void {
  const h = harness(report, RECONCILIATION);
  describe(`${RECONCILIATION.id}. ${RECONCILIATION.title}`, () => {
    const world = new ScenarioWorld('reconcile');
    const { database, exchange } = world;
    const double = new PaymentServiceDouble({ clients: CLIENTS });
    const worlds = new Map<string, Expected>();
    const sent = { notifications: 0, dropped: 0, requests: 0, non200: [] as string[] };
    let service: ServiceProcess;
    let consumer: EventConsumer;
    let lastSentAt = 0;

    h.check(
      'starts: the double of the payment API, a consumer, the service reconciling against the double',
      async () => {
        for (const client of CLIENTS) secrets.add('payment API client secret', client.clientSecret);
        const apiUrl = await double.start();
        world.keep(double);
        consumer = world.keep(await new EventConsumer(exchange).start());
        service = await world.startService({
          label: 'reconcile',
          databaseUrl: database.url,
          exchange,
          env: {
            PAYMENT_API_URL: apiUrl,
            PAYMENT_API_CREDENTIALS: CLIENTS.map((c) => `${c.posId}:${c.clientId}:${c.clientSecret}`).join(','),
            PAYMENT_API_MAX_PER_SECOND: '200',
            RECONCILE_AFTER: '1s',
            RECONCILE_INTERVAL: '250ms',
          },
        });
      },
    );

    h.check(
      `${ORDERS} orders with ${DROP * 100} % of their notifications lost: every projection and refund ends as the reference says`,
      async () => {
        const random = seededRandom(20261125);
        const lifecycles = Array.from({ length: ORDERS }, (_, i) => {
          const orderId = uniqueId(`REC${i}`);
          return { orderId, notes: lifecycle(plan(random), orderId) };
        });
        for (const { orderId, notes } of lifecycles) worlds.set(orderId, expectedOf(notes));
        // DROP of all notifications, chosen among those that may be lost (not the first of an order or refund).
        const decisions = lifecycles.map(({ notes }) => {
          const firsts = new Set<string>();
          return notes.map((n) => {
            const subject = n.refundId ?? n.orderId;
            const droppable = firsts.has(subject);
            firsts.add(subject);
            return { droppable, drop: false, twice: random() < 0.1, rank: random() };
          });
        });
        const all = decisions.flat();
        const droppable = all.filter((d) => d.droppable).sort((a, b) => a.rank - b.rank);
        for (const d of droppable.slice(0, Math.round(DROP * all.length))) d.drop = true;
        await pool(lifecycles, LANES, async ({ notes }, index) => {
          for (const [i, note] of notes.entries()) {
            const body = Buffer.from(note.body);
            double.learn(body);
            sent.notifications += 1;
            const decision = decisions[index]?.[i];
            if (decision?.drop) {
              sent.dropped += 1;
              continue;
            }
            for (let copy = 0; copy < (decision?.twice ? 2 : 1); copy += 1) {
              const result = await postNotification(service.publicPort, body, { timeoutMs: 15_000 });
              sent.requests += 1;
              if (result.status !== 200) sent.non200.push(`${note.orderId} ${note.status}: ${result.status}`);
            }
          }
        });
        lastSentAt = Date.now();
        h.figure('orders', ORDERS);
        h.figure(
          'notifications',
          `${sent.notifications} told to the API, ${sent.dropped} lost (${Math.round((100 * sent.dropped) / sent.notifications)} %), ${sent.requests} requests`,
        );
        expect(sent.non200).toEqual([]);

        const differences = async (): Promise<string[]> => {
          const found: string[] = [];
          // Two at a time: the admin port caps its concurrent data requests (503 admin_busy past it).
          await pool([...worlds], 2, async ([orderId, want]) => {
            const { status, body } = await getJson<OrderView>(
              service.adminPort,
              `/orders/${encodeURIComponent(orderId)}`,
            );
            if (status !== 200) return void found.push(`GET /orders/${orderId}: ${status}`);
            const actual = {
              status: body.status,
              paymentId: body.paymentId,
              totalAmount: body.totalAmount,
              refunds: Object.fromEntries(body.refunds.map((r) => [r.refundId, r.status])),
            };
            const expected = { ...want, refunds: Object.fromEntries(want.refunds) };
            if (JSON.stringify(actual) !== JSON.stringify(expected))
              found.push(`order ${orderId}: service ${JSON.stringify(actual)}, reference ${JSON.stringify(expected)}`);
          });
          return found;
        };
        let left = await differences();
        const wrongAtFirst = left.length;
        while (left.length > 0 && Date.now() - lastSentAt < CONVERGE_MS) {
          await sleep(500);
          left = await differences();
        }
        h.figure('orders wrong when the last notification was sent', wrongAtFirst);
        h.figure(
          'all repaired after the last notification',
          left.length === 0 ? seconds(Date.now() - lastSentAt) : 'no',
        );
        expect(left.slice(0, 5)).toEqual([]);
      },
      CONVERGE_MS + 120_000,
    );

    h.check(
      'every event is published once, each order in data.sequence order without a gap; the repaired statuses say observedVia reconciliation',
      async () => {
        let check = await checkEvents(database.url, consumer.messages);
        const deadline = Date.now() + 30_000;
        while ((check.pending > 0 || check.distinctConsumed < check.outboxEvents) && Date.now() < deadline) {
          await sleep(200);
          check = await checkEvents(database.url, consumer.messages);
        }
        const events = new Map<string, CloudEventBody & { data: { observedVia?: string } }>();
        for (const body of consumer.bodies<CloudEventBody & { data: { observedVia?: string } }>())
          events.set(body.id, body);
        const meanings = new Map<string, number>();
        for (const e of events.values()) {
          const key = `${e.data.orderId} ${e.type} ${e.data.refundId ?? ''} ${e.data.status}`;
          meanings.set(key, (meanings.get(key) ?? 0) + 1);
        }
        const twice = [...meanings].filter(([, n]) => n > 1).map(([key]) => key);
        const repaired = [...events.values()].filter((e) => e.data.observedVia === 'reconciliation').length;
        const metrics = await service.metricsText();
        const repairs = counterSum(metrics, 'reconciliation_repairs_total');
        h.figure(
          'events',
          `${check.outboxEvents} committed, ${check.distinctConsumed} consumed, ${repaired} observed via reconciliation, ${check.redeliveries} redelivered with the same id`,
        );
        h.figure('statuses repaired (reconciliation_repairs_total)', repairs);
        expect(check.problems).toEqual([]);
        expect(check.pending).toBe(0);
        expect(twice).toEqual([]);
        expect(
          [...events.values()].filter((e) => !['notification', 'reconciliation'].includes(e.data.observedVia ?? '')),
        ).toEqual([]);
        expect(repaired).toBeGreaterThan(0);
        expect(repairs).toBe(repaired);
      },
    );

    h.check(
      'nothing is left to check: no order stuck or given up, the API asked within its caps, the records consistent',
      async () => {
        const metrics = await service.metricsText();
        const checks = counterSum(metrics, 'reconciliation_checks_total');
        const calls = counterSum(metrics, 'payment_api_requests_total');
        h.figure(
          'reconciliation checks',
          `${checks} (${(checks / ORDERS).toFixed(2)} per order); API requests ${calls}, peak in flight ${double.peakInFlight}`,
        );
        h.figure('token fetches', counterSum(metrics, 'payment_api_token_fetches_total'));
        expect(counterSum(metrics, 'reconciliation_stuck_orders')).toBe(0);
        expect(counterSum(metrics, 'reconciliation_given_up_orders')).toBe(0);
        expect(double.peakInFlight).toBeLessThanOrEqual(4);
        expect(await consistencyViolations(database.url)).toEqual([]);
        expect(await service.stop()).toMatchObject({ code: 0, signal: null });
      },
    );

    h.secretsCheck(() => world.services);
  });
}
