import fc from 'fast-check';
import { EventConsumer, uniqueExchange } from '../../support/broker';
import { uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, postNotification, sleep } from '../support/http';
import {
  applyDelivery,
  emptyModel,
  lifecycle,
  schedule,
  type Delivery,
  type ModelEvent,
  type ModelState,
  type OrderPlan,
  type RefundPlan,
} from '../support/lifecycleModel';
import { harness, seconds } from '../support/scenario';
import { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts, scenarioDatabase } from '../support/store';
import type { CloudEventBody } from '../support/traffic';

const RUNS = Number(process.env.RELIABILITY_MODEL_RUNS ?? 100);

export const ORDERING: ScenarioDefinition = {
  id: 6,
  title: 'Model-based ordering (fast-check)',
  done:
    `${RUNS} random worlds of 1 to 3 orders, each a realistic lifecycle (hosted, card or code-based payment; auto-receive on or off; ` +
    'completed or canceled; up to two partial or full refunds, some with PENDING, finalized or canceled; a second payment attempt ' +
    'canceled after the first completed), every notification sent 1 to 3 times (some re-serialized, some copies at the same moment) ' +
    'and delayed at random so they overtake each other; orders in parallel. Compared with a reference model written in the test: ' +
    'each answer, GET /orders/:id and /refunds/:id, and the events a consumer sees.',
};

const refundArb: fc.Arbitrary<RefundPlan> = fc.record({
  full: fc.boolean(),
  withPending: fc.boolean(),
  final: fc.constantFrom<'FINALIZED' | 'CANCELED'>('FINALIZED', 'FINALIZED', 'CANCELED'),
});

const planArb: fc.Arbitrary<OrderPlan> = fc.record({
  pay: fc.constantFrom<'hosted' | 'card' | 'code'>('hosted', 'card', 'code'),
  autoReceive: fc.boolean(),
  outcome: fc.constantFrom<'completed' | 'canceled'>('completed', 'completed', 'canceled'),
  secondAttempt: fc.boolean(),
  refunds: fc.array(refundArb, { maxLength: 2 }),
  copies: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 10 }),
  reserialized: fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
  parallel: fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
  delays: fc.array(fc.nat({ max: 8 }), { minLength: 1, maxLength: 20 }),
  disorder: fc.constantFrom(0, 3, 10, 50),
});

/** The case the issue names: a second attempt canceled after the first completed, arriving in order and duplicated. */
const SECOND_ATTEMPT: OrderPlan = {
  pay: 'card',
  autoReceive: true,
  outcome: 'completed',
  secondAttempt: true,
  refunds: [{ full: false, withPending: false, final: 'FINALIZED' }],
  copies: [2],
  reserialized: [true, false],
  parallel: [false],
  delays: [0],
  disorder: 0,
};

interface OrderView {
  status: string;
  paymentId: string | null;
  payMethodType: string | null;
  totalAmount: string | null;
  currencyCode: string | null;
  extOrderId: string | null;
  localReceiptDateTime: string | null;
  history: Array<{ status: string; outcome: string; deliveries: number }>;
  refunds: Array<{ refundId: string; status: string }>;
}

interface RefundView {
  orderId: string;
  status: string;
  amount: string | null;
  currencyCode: string | null;
  extRefundId: string | null;
  history: Array<{ status: string; outcome: string; deliveries: number }>;
}

const pick = (fields: Record<string, string | null>, keys: string[]): Record<string, string | null> =>
  Object.fromEntries(keys.map((k) => [k, fields[k] ?? null]));

export function orderingScenario(report: RunReport): void {
  const h = harness(report, ORDERING);
  describe(`${ORDERING.id}. ${ORDERING.title}`, () => {
    const database = scenarioDatabase('model');
    const exchange = uniqueExchange();
    const services: ServiceProcess[] = [];
    let service: ServiceProcess;
    let consumer: EventConsumer;
    const expectedEvents = new Map<string, ModelEvent[]>();
    const stats = { worlds: 0, orders: 0, notifications: 0, requests: 0, maxLatency: 0, outcomes: new Map<string, number>() };

    afterAll(async () => {
      for (const s of services) await s.stop();
      await consumer?.stop();
      await database.drop();
    });

    h.check('starts', async () => {
      consumer = await new EventConsumer(exchange).start();
      service = await ServiceProcess.start({ label: 'model', databaseUrl: database.url, exchange });
      services.push(service);
    });

    const deliverLane = async (steps: Delivery[][], model: ModelState, problems: string[]): Promise<void> => {
      for (const step of steps) {
        const results = await Promise.all(step.map((d) => postNotification(service.publicPort, d.body, { timeoutMs: 15_000 })));
        stats.requests += results.length;
        const expected = [applyDelivery(model, step[0]?.notification as Delivery['notification'])];
        for (let i = 1; i < step.length; i += 1) expected.push(applyDelivery(model, step[i]?.notification as Delivery['notification']));
        const actual = results.map((r) => {
          stats.maxLatency = Math.max(stats.maxLatency, r.ms);
          return r.status === 200 ? (JSON.parse(r.body) as { outcome: string }).outcome : `HTTP ${r.status} ${r.error ?? r.body.slice(0, 80)}`;
        });
        for (const o of actual) stats.outcomes.set(o, (stats.outcomes.get(o) ?? 0) + 1);
        // Copies sent at the same moment: which one wins is not determined, the multiset of answers is.
        if ([...actual].sort().join() !== [...expected].sort().join()) {
          const n = step[0]?.notification;
          problems.push(`${n?.kind} ${n?.refundId ?? n?.orderId} ${n?.status} x${step.length}: answered ${actual.join('/')}, model says ${expected.join('/')}`);
        }
      }
    };

    const verifyWorld = async (model: ModelState, orderIds: string[], problems: string[]): Promise<void> => {
      for (const [orderId, expected] of model.orders) {
        const { status, body } = await getJson<OrderView>(service.adminPort, `/orders/${encodeURIComponent(orderId)}`);
        if (status !== 200) {
          problems.push(`GET /orders/${orderId}: ${status}`);
          continue;
        }
        const actual = {
          status: body.status,
          ...pick(body as unknown as Record<string, string | null>, ['paymentId', 'payMethodType', 'totalAmount', 'currencyCode', 'extOrderId', 'localReceiptDateTime']),
          history: body.history.map((x) => ({ status: x.status, outcome: x.outcome, deliveries: x.deliveries })),
          refunds: body.refunds.map((r) => r.refundId).sort(),
        };
        const want = {
          status: expected.status,
          ...pick(expected.fields, ['paymentId', 'payMethodType', 'totalAmount', 'currencyCode', 'extOrderId', 'localReceiptDateTime']),
          history: expected.history,
          refunds: [...model.refunds].filter(([, r]) => r.orderId === orderId).map(([id]) => id).sort(),
        };
        if (JSON.stringify(actual) !== JSON.stringify(want)) problems.push(`order ${orderId}: service ${JSON.stringify(actual)}, model ${JSON.stringify(want)}`);
      }
      for (const [refundId, expected] of model.refunds) {
        const { status, body } = await getJson<RefundView>(service.adminPort, `/refunds/${encodeURIComponent(refundId)}`);
        if (status !== 200) {
          problems.push(`GET /refunds/${refundId}: ${status}`);
          continue;
        }
        const actual = {
          orderId: body.orderId,
          status: body.status,
          ...pick(body as unknown as Record<string, string | null>, ['amount', 'currencyCode', 'extRefundId']),
          history: body.history.map((x) => ({ status: x.status, outcome: x.outcome, deliveries: x.deliveries })),
        };
        const want = { orderId: expected.orderId, status: expected.status, ...pick(expected.fields, ['amount', 'currencyCode', 'extRefundId']), history: expected.history };
        if (JSON.stringify(actual) !== JSON.stringify(want)) problems.push(`refund ${refundId}: service ${JSON.stringify(actual)}, model ${JSON.stringify(want)}`);
      }

      // The events tell the same story: per order, deduplicated by id, in arrival order.
      const wanted = orderIds.reduce((sum, id) => sum + (model.events.get(id)?.length ?? 0), 0);
      const mine = (): CloudEventBody[] => {
        const seen = new Set<string>();
        return consumer.bodies<CloudEventBody>().filter((e) => orderIds.includes(e.subject) && !seen.has(e.id) && (seen.add(e.id), true));
      };
      const deadline = Date.now() + 15_000;
      while (mine().length < wanted && Date.now() < deadline) await sleep(25);
      for (const orderId of orderIds) {
        const events = mine().filter((e) => e.subject === orderId);
        const want = (model.events.get(orderId) ?? []).map((e) => ({
          type: e.type,
          status: e.status,
          previousStatus: e.previousStatus,
          sequence: e.sequence,
          ...(e.type.startsWith('order.') ? pick(e.fields, ['paymentId', 'payMethodType']) : pick(e.fields, ['amount'])),
        }));
        const actual = events.map((e) => {
          const data = e.data as unknown as Record<string, string | null>;
          return {
            type: e.type,
            status: e.data.status,
            previousStatus: e.data.previousStatus,
            sequence: e.data.sequence,
            ...(e.type.startsWith('order.') ? pick(data, ['paymentId', 'payMethodType']) : pick(data, ['amount'])),
          };
        });
        if (JSON.stringify(actual) !== JSON.stringify(want)) problems.push(`events of ${orderId}: consumer saw ${JSON.stringify(actual)}, model says ${JSON.stringify(want)}`);
        expectedEvents.set(orderId, model.events.get(orderId) ?? []);
      }
    };

    h.check(
      `${RUNS} random interleavings, duplications and delays end in the projections and events the reference model predicts`,
      async () => {
        const started = Date.now();
        await fc.assert(
          fc.asyncProperty(fc.array(planArb, { minLength: 1, maxLength: 3 }), async (plans) => {
            const model = emptyModel();
            const orderIds = plans.map(() => uniqueId('MDL'));
            const problems: string[] = [];
            stats.worlds += 1;
            stats.orders += plans.length;
            const lanes = plans.map((plan, i) => {
              const notes = lifecycle(plan, orderIds[i] as string);
              stats.notifications += notes.length;
              return schedule(plan, notes);
            });
            // Orders are independent: their lanes run in parallel, each lane in its own arrival order.
            await Promise.all(lanes.map((steps) => deliverLane(steps, model, problems)));
            await verifyWorld(model, orderIds, problems);
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          { numRuns: RUNS, examples: [[[SECOND_ATTEMPT]]], interruptAfterTimeLimit: 100_000, markInterruptAsFailure: false, includeErrorInReport: true },
        );
        h.figure('worlds', `${stats.worlds} (${stats.orders} orders, ${stats.notifications} notifications) in ${seconds(Date.now() - started)}`);
        h.figure('requests', stats.requests);
        h.figure('200s', [...stats.outcomes].filter(([k]) => !k.startsWith('HTTP')).reduce((sum, [, v]) => sum + v, 0));
        h.figure('answers', [...stats.outcomes].map(([k, v]) => `${k} x${v}`).join(', '));
        h.figure('max latency', seconds(stats.maxLatency));
      },
      150_000,
    );

    h.check('no event beyond the model was ever published, and the store is consistent', async () => {
      const expected = [...expectedEvents.values()].reduce((sum, e) => sum + e.length, 0);
      await sleep(500);
      const ids = new Set(consumer.bodies<CloudEventBody>().filter((e) => expectedEvents.has(e.subject)).map((e) => e.id));
      const stored = await counts(database.url);
      h.figure('rows', `${stored.notifications} notifications, ${stored.deliveries} deliveries, ${stored.variants} variants`);
      h.figure('events', `${expected} predicted, ${ids.size} consumed (distinct ids), ${stored.events} committed`);
      expect(ids.size).toBe(expected);
      expect(stored.events).toBe(expected);
      expect(await consistencyViolations(database.url)).toEqual([]);
    });

    h.check('stops cleanly (SIGTERM, exit code 0)', async () => {
      expect(await service.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => services);
  });
}
