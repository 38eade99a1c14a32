import http from 'node:http';
import { EventConsumer, uniqueExchange } from '../../support/broker';
import { query, type TestDatabase } from '../../support/database';
import type { RunReport, ScenarioDefinition } from '../report';
import { FaultProxy } from '../../support/faultProxy';
import { pool, postNotification, send } from '../support/http';
import { sleep } from '../../support/wait';
import { harness, percentile, seconds } from '../support/scenario';
import { RssSampler, ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts, scenarioDatabase } from '../support/store';
import { cardLifecycles, checkCommitted, Ledger, shuffle, waitForEvents, type Note } from '../support/traffic';

const ORDERS = 300;
const REQUESTS = 3_000;
const RSS_BOUND_MB = 512;
/**
 * "Never hangs past a few seconds": the recorder waits at most DATABASE_TIMEOUT for its
 * transaction and the handler gives up one second after it; 2 s more for the queue of sockets on a
 * two-core machine that also runs the load generator.
 */
const hangBoundMs = (databaseTimeoutMs: number): number => databaseTimeoutMs + 3_000;

interface Variant {
  name: string;
  concurrency: number;
  databaseTimeoutMs: number;
  env: Record<string, string>;
  /** Postgres reached through a proxy adding this much each way (0: direct). */
  databaseLatencyMs: number;
  /** Whether this configuration must shed load (503) under the flood. */
  mustShed: boolean;
  /** Whether the refused deliveries are sent again until all are accepted (too slow when the database is far away). */
  retryAll: boolean;
}

const VARIANTS: Variant[] = [
  {
    name: 'default configuration',
    concurrency: 300,
    databaseTimeoutMs: 3_000,
    databaseLatencyMs: 0,
    env: {},
    mustShed: false,
    retryAll: true,
  },
  {
    // Saturated: more requests in flight than the recorder can commit within DATABASE_TIMEOUT, so the
    // queue's tail must be refused. (A batch costs two round trips to Postgres; at 25 ms each way and
    // concurrency 500 the service now takes the whole flood without refusing any.)
    name: 'saturated (Postgres 50 ms away each way, DATABASE_TIMEOUT 1 s)',
    concurrency: 800,
    databaseTimeoutMs: 1_000,
    databaseLatencyMs: 50,
    env: { DATABASE_TIMEOUT: '1s' },
    mustShed: true,
    retryAll: true,
  },
  {
    // A batch now takes about as long as the handler waits (DATABASE_TIMEOUT + 1 s): some transactions
    // are still running when their requests are answered 503.
    name: 'slow database (Postgres 120 ms away each way, DATABASE_TIMEOUT 1 s)',
    concurrency: 500,
    databaseTimeoutMs: 1_000,
    databaseLatencyMs: 120,
    env: { DATABASE_TIMEOUT: '1s' },
    mustShed: true,
    retryAll: false,
  },
];

export const FLOOD: ScenarioDefinition = {
  id: 5,
  title: 'Flood: the sender retries everything at once after an outage',
  done:
    `${REQUESTS} requests carrying the notifications of ${ORDERS} card payments (PENDING, COMPLETED with buyer, a refund for every ` +
    `second order: 750 notifications, each sent 4 times, shuffled) through a keep-alive pool, against ${VARIANTS.length} configurations: ` +
    `${VARIANTS.map((v) => `${v.name} at concurrency ${v.concurrency}`).join('; ')}. RSS of the child sampled from /proc every 100 ms, ` +
    '/livez probed every 250 ms; then (but for the slow database) the refused ones sent again, 20 at a time, until accepted.',
};

export function floodScenario(report: RunReport): void {
  const h = harness(report, FLOOD);
  describe(`${FLOOD.id}. ${FLOOD.title}`, () => {
    const services: ServiceProcess[] = [];
    const databases: TestDatabase[] = [];
    const consumers: EventConsumer[] = [];
    const proxies: FaultProxy[] = [];
    const total = {
      requests: 0,
      ok: 0,
      unavailable: 0,
      maxLatency: 0,
      peakMb: 0,
      notifications: 0,
      deliveries: 0,
      events: 0,
      consumed: 0,
    };

    afterAll(async () => {
      for (const s of services) await s.stop();
      for (const c of consumers) await c.stop();
      for (const p of proxies) await p.stop();
      for (const d of databases) await d.drop();
    });

    VARIANTS.forEach((variant, index) => {
      const tag = ['default', 'saturated', 'slow'][index] as string;
      const database = scenarioDatabase(`flood${index}`);
      databases.push(database);
      const flood = new Ledger();
      const ledger = new Ledger();
      let service: ServiceProcess;
      let consumer: EventConsumer;
      let lifecycles: ReturnType<typeof cardLifecycles>;
      const bound = hangBoundMs(variant.databaseTimeoutMs);

      h.check(
        `${variant.name}: ${REQUESTS} requests at concurrency ${variant.concurrency} are each answered 200 or 503 with Retry-After, none after more than ${bound / 1000} s${variant.mustShed ? ', with load shed' : ''}; RSS stays under ${RSS_BOUND_MB} MB`,
        async () => {
          const exchange = uniqueExchange();
          consumer = await new EventConsumer(exchange).start();
          consumers.push(consumer);
          let databaseUrl = database.url;
          if (variant.databaseLatencyMs > 0) {
            const proxy = await new FaultProxy(5432).start();
            proxy.latencyMs = variant.databaseLatencyMs;
            proxies.push(proxy);
            databaseUrl = `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`;
          }
          service = await ServiceProcess.start({ label: `flood-${tag}`, databaseUrl, exchange, env: variant.env });
          services.push(service);
          lifecycles = cardLifecycles(`FL${index}`, ORDERS);

          const baselineMb = Math.round((service.rssKb() ?? 0) / 1024);
          const requests: Note[] = shuffle(
            Array.from({ length: REQUESTS }, (_, i) => lifecycles.notes[i % lifecycles.notes.length] as Note),
          );
          const agent = new http.Agent({ keepAlive: true, maxSockets: variant.concurrency });
          const rss = new RssSampler(service, 100).start();
          const livez: number[] = [];
          let flooding = true;
          const probe = (async () => {
            while (flooding) {
              livez.push(
                (await send({ port: service.adminPort, method: 'GET', path: '/livez', timeoutMs: 10_000 })).ms,
              );
              await sleep(250);
            }
          })();
          const started = Date.now();
          await pool(requests, variant.concurrency, async (note) => {
            flood.add(note, await postNotification(service.publicPort, note.body, { agent, timeoutMs: 30_000 }));
          });
          const elapsed = Date.now() - started;
          flooding = false;
          await probe;
          const peakMb = rss.stop();
          agent.destroy();
          for (const a of flood.attempts) ledger.add(a.note, a.result);
          total.peakMb = Math.max(total.peakMb, peakMb);

          const latencies = flood.attempts.map((a) => a.result.ms);
          h.figure(
            `${tag}: flood`,
            `${REQUESTS} requests in ${seconds(elapsed)} (${Math.round(REQUESTS / (elapsed / 1000))} req/s)`,
          );
          h.figure(
            `${tag}: answers`,
            Object.entries(flood.statuses())
              .map(([k, v]) => `${k} x${v}`)
              .join(', '),
          );
          h.figure(
            `${tag}: latency p50/p99/max`,
            `${seconds(percentile(latencies, 50))} / ${seconds(percentile(latencies, 99))} / ${seconds(Math.max(...latencies))}`,
          );
          h.figure(`${tag}: peak RSS`, `${peakMb} MB (${baselineMb} MB before; ${rss.samples} samples)`);
          h.figure(`${tag}: /livez during the flood (max)`, seconds(Math.max(0, ...livez)));

          service.assertAlive();
          const wrong = flood.attempts.filter((a) => a.result.status !== 200 && a.result.status !== 503);
          expect(
            wrong
              .slice(0, 5)
              .map(
                (a) => `${a.result.status} ${a.result.error ?? a.result.body.slice(0, 100)} after ${a.result.ms} ms`,
              ),
          ).toEqual([]);
          expect(wrong).toHaveLength(0);
          for (const a of flood.attempts.filter((x) => x.result.status === 503))
            expect(a.result.headers['retry-after']).toMatch(/^\d+$/);
          expect(Math.max(...latencies)).toBeLessThanOrEqual(bound);
          expect(peakMb).toBeLessThanOrEqual(RSS_BOUND_MB);
          if (variant.mustShed) expect(flood.unavailable).toBeGreaterThan(0);
        },
        120_000,
      );

      h.check(
        `${variant.name}: ${variant.retryAll ? 'the refused deliveries sent again are accepted; ' : ''}every 200 is committed and no 503 wrote anything`,
        async () => {
          service.assertAlive();
          const retryUntil = Date.now() + 45_000;
          for (let round = 0; variant.retryAll && round < 30 && Date.now() < retryUntil; round += 1) {
            const missing = ledger.notAccepted(lifecycles.notes);
            if (missing.length === 0) break;
            await pool(missing, 20, async (note) => {
              ledger.add(note, await postNotification(service.publicPort, note.body, { timeoutMs: 30_000 }));
            });
            await sleep(300);
          }
          const committed = await checkCommitted(database.url, ledger);
          const stored = await counts(database.url);
          total.requests += ledger.requests;
          total.ok += ledger.ok;
          total.unavailable += ledger.unavailable;
          total.maxLatency = Math.max(total.maxLatency, ledger.maxLatencyMs());
          h.figure('requests', total.requests);
          h.figure('200s', total.ok);
          h.figure('503s', total.unavailable);
          h.figure('max latency', seconds(total.maxLatency));
          h.figure('peak RSS', `${total.peakMb} MB`);
          total.notifications += stored.notifications;
          total.deliveries += stored.deliveries;
          h.figure('rows', `${total.notifications} notifications, ${total.deliveries} deliveries`);
          h.figure(`${tag}: 503s whose write was committed anyway`, committed.storedWithoutOk);
          expect(committed.okButMissing).toEqual([]);
          expect(committed.unexplained).toEqual([]);
          expect(await consistencyViolations(database.url)).toEqual([]);
          // README: 503 means "nothing was written".
          expect({ '503 answers whose delivery was committed anyway': committed.storedWithoutOk }).toEqual({
            '503 answers whose delivery was committed anyway': 0,
          });
          expect({ 'deliveries stored': stored.deliveries }).toEqual({ 'deliveries stored': ledger.ok });
          if (variant.retryAll) expect(ledger.notAccepted(lifecycles.notes)).toEqual([]);
        },
        90_000,
      );

      h.check(
        `${variant.name}: ${variant.retryAll ? 'the projections end as the lifecycles say and ' : ''}every committed event is published`,
        async () => {
          const events = await waitForEvents(database.url, consumer.messages, 45_000);
          total.events += events.outboxEvents;
          total.consumed += events.distinctConsumed;
          h.figure('events', `${total.events} committed, ${total.consumed} consumed`);
          h.figure(
            `${tag}: events`,
            `${events.outboxEvents} committed, ${events.distinctConsumed} consumed, ${events.redeliveries} redelivered with the same id`,
          );
          expect(events.problems).toEqual([]);
          expect(events.pending).toBe(0);
          if (!variant.retryAll) return;
          const orders = await query<{ status: string; n: string }>(
            database.url,
            'SELECT status, count(*) AS n FROM orders GROUP BY status',
          );
          const refunds = await query<{ status: string; n: string }>(
            database.url,
            'SELECT status, count(*) AS n FROM refunds GROUP BY status',
          );
          expect(orders.map((r) => [r.status, Number(r.n)])).toEqual([['COMPLETED', ORDERS]]);
          expect(refunds.map((r) => [r.status, Number(r.n)])).toEqual([['FINALIZED', lifecycles.refundIds.length]]);
        },
        60_000,
      );

      h.check(`${variant.name}: stops cleanly (SIGTERM, exit code 0)`, async () => {
        expect(await service.stop()).toMatchObject({ code: 0, signal: null });
      });
    });

    h.secretsCheck(() => services);
  });
}
