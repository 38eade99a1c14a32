import fc from 'fast-check';
import { EventConsumer } from '../../support/broker';
import { uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, postNotification } from '../support/http';
import { sleep, waitUntil } from '../../support/wait';
import {
  applyDelivery,
  emptyModel,
  lifecycle,
  schedule,
  type Delivery,
  type ModelState,
  type OrderPlan,
  type RefundPlan,
} from '../support/lifecycleModel';
import { harness, seconds } from '../support/scenario';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts } from '../support/store';
import type { CloudEventBody } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

const RUNS = Number(process.env.RELIABILITY_MODEL_RUNS ?? 100);
const PARALLEL_RUNS = Math.max(1, Math.round(RUNS / 2));

export const ORDERING: ScenarioDefinition = {
  id: 6,
  title: 'Model-based ordering (fast-check)',
  done:
    `${RUNS} random worlds of 1 to 3 orders, each a realistic lifecycle (hosted, card or code-based payment; auto-receive on or off; ` +
    'completed or canceled; up to two partial or full refunds, some with PENDING, finalized or canceled; a second payment attempt ' +
    'canceled after the first completed), every notification sent 1 to 3 times (some re-serialized, some copies at the same moment) ' +
    'and delayed at random so they overtake each other; orders in parallel. Compared with a reference model written in the test: ' +
    'each answer, GET /orders/:id and /refunds/:id, and the events a consumer sees. Then half as many worlds whose notifications ' +
    'and copies all arrive at the same moment, checked for complete histories, the one final status and a gapless event story.',
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
  orderId: string;
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
    const world = new ScenarioWorld('model');
    const { database, exchange, services } = world;
    let service: ServiceProcess;
    let consumer: EventConsumer;
    /** Events each order must have produced (from the model, or from the recorded history for parallel arrivals). */
    const expectedEvents = new Map<string, number>();
    const parallelOrders: Array<{ orderId: string; events: number; status: string }> = [];
    let parallelDone = Date.now();
    const stats = {
      worlds: 0,
      orders: 0,
      notifications: 0,
      requests: 0,
      maxLatency: 0,
      outcomes: new Map<string, number>(),
    };

    h.check('starts', async () => {
      consumer = world.keep(await new EventConsumer(exchange).start());
      service = await world.startService({ label: 'model', databaseUrl: database.url, exchange });
    });

    const deliverLane = async (steps: Delivery[][], model: ModelState, problems: string[]): Promise<void> => {
      for (const step of steps) {
        const results = await Promise.all(
          step.map((d) => postNotification(service.publicPort, d.body, { timeoutMs: 15_000 })),
        );
        stats.requests += results.length;
        const expected = [applyDelivery(model, step[0]?.notification as Delivery['notification'])];
        for (let i = 1; i < step.length; i += 1)
          expected.push(applyDelivery(model, step[i]?.notification as Delivery['notification']));
        const actual = results.map((r) => {
          stats.maxLatency = Math.max(stats.maxLatency, r.ms);
          return r.status === 200
            ? (JSON.parse(r.body) as { outcome: string }).outcome
            : `HTTP ${r.status} ${r.error ?? r.body.slice(0, 80)}`;
        });
        for (const o of actual) stats.outcomes.set(o, (stats.outcomes.get(o) ?? 0) + 1);
        // Copies sent at the same moment: which one wins is not determined, the multiset of answers is.
        if ([...actual].sort().join() !== [...expected].sort().join()) {
          const n = step[0]?.notification;
          problems.push(
            `${n?.kind} ${n?.refundId ?? n?.orderId} ${n?.status} x${step.length}: answered ${actual.join('/')}, model says ${expected.join('/')}`,
          );
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
          ...pick(body as unknown as Record<string, string | null>, [
            'paymentId',
            'payMethodType',
            'totalAmount',
            'currencyCode',
            'extOrderId',
            'localReceiptDateTime',
          ]),
          history: body.history.map((x) => ({ status: x.status, outcome: x.outcome, deliveries: x.deliveries })),
          refunds: body.refunds.map((r) => r.refundId).sort(),
        };
        const want = {
          status: expected.status,
          ...pick(expected.fields, [
            'paymentId',
            'payMethodType',
            'totalAmount',
            'currencyCode',
            'extOrderId',
            'localReceiptDateTime',
          ]),
          history: expected.history,
          refunds: [...model.refunds]
            .filter(([, r]) => r.orderId === orderId)
            .map(([id]) => id)
            .sort(),
        };
        if (JSON.stringify(actual) !== JSON.stringify(want))
          problems.push(`order ${orderId}: service ${JSON.stringify(actual)}, model ${JSON.stringify(want)}`);
      }
      for (const [refundId, expected] of model.refunds) {
        const { status, body } = await getJson<RefundView>(
          service.adminPort,
          `/refunds/${encodeURIComponent(refundId)}`,
        );
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
        const want = {
          orderId: expected.orderId,
          status: expected.status,
          ...pick(expected.fields, ['amount', 'currencyCode', 'extRefundId']),
          history: expected.history,
        };
        if (JSON.stringify(actual) !== JSON.stringify(want))
          problems.push(`refund ${refundId}: service ${JSON.stringify(actual)}, model ${JSON.stringify(want)}`);
      }

      // The events tell the same story: per order, deduplicated by id, in arrival order.
      const wanted = orderIds.reduce((sum, id) => sum + (model.events.get(id)?.length ?? 0), 0);
      const mine = (): CloudEventBody[] => {
        const seen = new Set<string>();
        return consumer
          .bodies<CloudEventBody>()
          .filter((e) => orderIds.includes(e.subject) && !seen.has(e.id) && (seen.add(e.id), true));
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
          ...(e.type.startsWith('order.')
            ? pick(e.fields, ['paymentId', 'payMethodType'])
            : pick(e.fields, ['amount'])),
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
        if (JSON.stringify(actual) !== JSON.stringify(want))
          problems.push(
            `events of ${orderId}: consumer saw ${JSON.stringify(actual)}, model says ${JSON.stringify(want)}`,
          );
        expectedEvents.set(orderId, model.events.get(orderId)?.length ?? 0);
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
          {
            numRuns: RUNS,
            examples: [[[SECOND_ATTEMPT]]],
            interruptAfterTimeLimit: 100_000,
            markInterruptAsFailure: false,
            includeErrorInReport: true,
          },
        );
        h.figure(
          'worlds',
          `${stats.worlds} (${stats.orders} orders, ${stats.notifications} notifications) in ${seconds(Date.now() - started)}`,
        );
        h.figure('requests', stats.requests);
        h.figure(
          '200s',
          [...stats.outcomes].filter(([k]) => !k.startsWith('HTTP')).reduce((sum, [, v]) => sum + v, 0),
        );
        h.figure('answers', [...stats.outcomes].map(([k, v]) => `${k} x${v}`).join(', '));
        h.figure('max latency', seconds(stats.maxLatency));
      },
      150_000,
    );

    h.check(
      `${PARALLEL_RUNS} worlds whose notifications all arrive at the same moment end consistent: complete histories and delivery counts, the one final status, one conflict per second final status`,
      async () => {
        const started = Date.now();
        let requests = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(planArb, { minLength: 1, maxLength: 3 }), async (plans) => {
            const orderIds = plans.map(() => uniqueId('PAR'));
            const problems: string[] = [];
            const worlds = plans.map((plan, i) => {
              const notes = lifecycle(plan, orderIds[i] as string);
              // Every copy of every notification of the world at once.
              const deliveries = schedule({ ...plan, parallel: [true], disorder: 0 }, notes).flat();
              return { plan, orderId: orderIds[i] as string, notes, deliveries };
            });
            const results = await Promise.all(
              worlds.flatMap((w) =>
                w.deliveries.map((d) => postNotification(service.publicPort, d.body, { timeoutMs: 15_000 })),
              ),
            );
            requests += results.length;
            for (const r of results) {
              if (
                r.status !== 200 ||
                !['accepted', 'duplicate', 'stale', 'conflict'].includes(
                  (JSON.parse(r.body) as { outcome?: string }).outcome ?? '',
                )
              ) {
                problems.push(`answered ${r.status} ${r.body.slice(0, 100)}`);
              }
            }
            for (const w of worlds) {
              let events = 0;
              const copies = (kind: string, subject: string, status: string): number =>
                w.deliveries.filter(
                  (d) =>
                    d.notification.kind === kind &&
                    (d.notification.refundId ?? d.notification.orderId) === subject &&
                    d.notification.status === status,
                ).length;
              const { body: order } = await getJson<OrderView>(service.adminPort, `/orders/${w.orderId}`);
              const orderStatuses: string[] = [
                ...new Set(w.notes.filter((n) => n.kind === 'order').map((n) => n.status)),
              ];
              const finals: string[] = orderStatuses.filter((st) => st === 'COMPLETED' || st === 'CANCELED');
              const history = new Map(order.history.map((x) => [x.status, x]));
              if (JSON.stringify([...history.keys()].sort()) !== JSON.stringify([...orderStatuses].sort()))
                problems.push(
                  `order ${w.orderId}: history ${[...history.keys()].join(',')} for ${orderStatuses.join(',')}`,
                );
              for (const [st, x] of history)
                if (x.deliveries !== copies('order', w.orderId, st))
                  problems.push(
                    `order ${w.orderId} ${st}: ${x.deliveries} deliveries counted, ${copies('order', w.orderId, st)} sent`,
                  );
              if (!finals.includes(order.status))
                problems.push(`order ${w.orderId}: ends ${order.status}, not one of ${finals.join(',')}`);
              const conflicts = order.history.filter((x) => x.outcome === 'conflict').length;
              if (conflicts !== finals.length - 1)
                problems.push(`order ${w.orderId}: ${conflicts} conflicts with finals ${finals.join(',')}`);
              if ((order.payMethodType !== null) !== (history.get('COMPLETED')?.outcome === 'applied'))
                problems.push(
                  `order ${w.orderId}: payMethodType ${order.payMethodType} with COMPLETED ${history.get('COMPLETED')?.outcome}`,
                );
              events += order.history.filter((x) => x.outcome !== 'stale').length;
              for (const refundId of [
                ...new Set(w.notes.filter((n) => n.kind === 'refund').map((n) => n.refundId as string)),
              ]) {
                const { status, body: refund } = await getJson<RefundView>(service.adminPort, `/refunds/${refundId}`);
                if (status !== 200) {
                  problems.push(`refund ${refundId}: ${status}`);
                  continue;
                }
                const statuses = [...new Set(w.notes.filter((n) => n.refundId === refundId).map((n) => n.status))];
                const final = statuses.find((st) => st !== 'PENDING');
                if (refund.status !== final)
                  problems.push(`refund ${refundId}: ends ${refund.status}, expected ${final}`);
                if (refund.history.length !== statuses.length)
                  problems.push(`refund ${refundId}: history ${JSON.stringify(refund.history)}`);
                for (const x of refund.history)
                  if (x.deliveries !== copies('refund', refundId, x.status))
                    problems.push(`refund ${refundId} ${x.status}: ${x.deliveries} deliveries counted`);
                events += refund.history.filter((x) => x.outcome !== 'stale').length;
              }
              parallelOrders.push({ orderId: w.orderId, events, status: order.status });
              expectedEvents.set(w.orderId, events);
            }
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          {
            numRuns: PARALLEL_RUNS,
            interruptAfterTimeLimit: 60_000,
            markInterruptAsFailure: true,
            includeErrorInReport: true,
          },
        );
        h.figure(
          'parallel worlds',
          `${PARALLEL_RUNS} (${requests} requests, each world's at once) in ${seconds(Date.now() - started)}`,
        );
        parallelDone = Date.now();
      },
      90_000,
    );

    h.check(
      'the events of those worlds tell a gapless story per order (1..n, each change continuing from the one before) ending where the projection ends',
      async () => {
        const problems: string[] = [];
        const wanted = parallelOrders.reduce((sum, o) => sum + o.events, 0);
        const ids = new Set(parallelOrders.map((o) => o.orderId));
        const mine = (): CloudEventBody[] => {
          const seen = new Set<string>();
          return consumer
            .bodies<CloudEventBody>()
            .filter((e) => ids.has(e.subject) && !seen.has(e.id) && (seen.add(e.id), true));
        };
        await waitUntil('every event of the parallel worlds consumed', () => mine().length >= wanted, 45_000, 50).catch(
          () => 0,
        );
        h.figure('events of the parallel worlds all consumed after', seconds(Date.now() - parallelDone));
        const all = mine();
        for (const o of parallelOrders) {
          const story = all.filter((e) => e.subject === o.orderId).sort((a, b) => a.data.sequence - b.data.sequence);
          if (story.length !== o.events)
            problems.push(
              `order ${o.orderId}: ${story.length} events for ${o.events} applied or conflicting notifications`,
            );
          if (story.some((e, i) => e.data.sequence !== i + 1))
            problems.push(`order ${o.orderId}: sequences ${story.map((e) => e.data.sequence).join(',')}`);
          const previous = new Map<string, string | null>();
          for (const e of story.filter((x) => !x.type.endsWith('status_conflict'))) {
            const key = e.data.refundId ?? 'order';
            if ((previous.get(key) ?? null) !== e.data.previousStatus)
              problems.push(
                `order ${o.orderId}: ${e.type} says previous ${e.data.previousStatus}, the story says ${previous.get(key) ?? null}`,
              );
            previous.set(key, e.data.status);
          }
          if ((previous.get('order') ?? null) !== o.status)
            problems.push(
              `order ${o.orderId}: events end at ${previous.get('order') ?? null}, the projection at ${o.status}`,
            );
        }
        expect(problems).toEqual([]);
      },
      60_000,
    );

    h.check('no event beyond the model was ever published, and the store is consistent', async () => {
      const expected = [...expectedEvents.values()].reduce((sum, n) => sum + n, 0);
      // A pause that checks nothing more is published once the model's events have arrived.
      await sleep(500);
      const ids = new Set(
        consumer
          .bodies<CloudEventBody>()
          .filter((e) => expectedEvents.has(e.subject))
          .map((e) => e.id),
      );
      const stored = await counts(database.url);
      h.figure(
        'rows',
        `${stored.notifications} notifications, ${stored.deliveries} deliveries, ${stored.variants} variants`,
      );
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
