import { EventConsumer } from '../../support/broker';
import type { RunReport, ScenarioDefinition } from '../report';
import { FaultProxy } from '../../support/faultProxy';
import { getJson, send } from '../support/http';
import { sleep } from '../../support/wait';
import { harness, seconds } from '../support/scenario';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts } from '../support/store';
import { checkCommitted } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

/** The sender's patience: an answer must come before it, whatever the database does. */
const PATIENCE_MS = 5_000;
/** Notifications accepted before an outage, and after it: the service is under load when it comes and goes. */
const UNDER_LOAD = 50;

type Phase = 'reset' | 'silent' | 'failover';
/**
 * reset: connections dropped and refused (a crashed server); silent: a partition well beyond the
 * service's own timeouts (DATABASE_TIMEOUT, and a second batch's connection and statement
 * timeouts after it), so requests in flight and queued behind them must be given up in time;
 * failover: silent first (transactions hang, holding pool clients), then reset (the old primary is
 * gone) while those clients are checked out.
 */
const PHASES: Record<Phase, Array<{ fault: 'reset' | 'silent'; ms: number }>> = {
  reset: [{ fault: 'reset', ms: 3_000 }],
  silent: [{ fault: 'silent', ms: 9_000 }],
  failover: [
    { fault: 'silent', ms: 2_000 },
    { fault: 'reset', ms: 2_000 },
  ],
};
const outageMs = (phase: Phase): number => PHASES[phase].reduce((sum, step) => sum + step.ms, 0);
/** The chart's readinessProbe.timeoutSeconds. */
const READINESS_TIMEOUT_MS = 2_000;

export const DATABASE_OUTAGE: ScenarioDefinition = {
  id: 1,
  title: 'Database unreachable mid-traffic',
  done:
    'A paced sender (6 connections at a time, card payments and refunds, 10% duplicates, each refused delivery sent again after 300 ms) ' +
    `through a TCP proxy to Postgres; Postgres cut three times under traffic: reset for ${outageMs('reset') / 1000} s (connections dropped, new ones refused), ` +
    `silent for ${outageMs('silent') / 1000} s (network partition: no RST, bytes delayed until it heals), and a failover (silent 2 s, then reset 2 s, ` +
    'while transactions hold pool clients); default DATABASE_TIMEOUT (3 s).',
};

export function databaseOutageScenario(report: RunReport): void {
  const h = harness(report, DATABASE_OUTAGE);
  describe(`${DATABASE_OUTAGE.id}. ${DATABASE_OUTAGE.title}`, () => {
    const world = new ScenarioWorld('dbout');
    const { database, exchange, ledger, services } = world;
    const stream = new NoteStream('DBO');
    let proxy: FaultProxy;
    let service: ServiceProcess;
    let consumer: EventConsumer;
    const outages: Array<{ mode: Phase; from: number; to: number }> = [];

    const startService = async (): Promise<void> => {
      service = await world.startService({
        label: `database-outage-${services.length + 1}`,
        databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
        exchange,
      });
    };
    const crashes: string[] = [];

    h.check('starts with Postgres behind a TCP proxy', async () => {
      consumer = world.keep(await new EventConsumer(exchange).start());
      proxy = world.keep(await new FaultProxy(5432).start());
      await startService();
    });

    for (const mode of ['reset', 'silent', 'failover'] as const) {
      h.check(
        `${mode}: under traffic every delivery is answered 200, or 503 with Retry-After, within ${PATIENCE_MS / 1000} s; readiness is false during the outage; the refused ones are accepted once it is back`,
        async () => {
          try {
            await outagePhase(mode);
          } finally {
            proxy.pass();
            // A crash is this check's failure; the next checks go on with a restarted service (same database).
            if (!service.running) {
              crashes.push(`${mode}: ${service.problemLines(1).join('')}`);
              await startService();
            }
          }
        },
        60_000,
      );
    }

    async function outagePhase(mode: Phase): Promise<void> {
      const sender = new Sender({
        port: () => service.publicPort,
        alive: () => service.running,
        ledger,
        stream,
        workers: 6,
        pauseMs: 15,
        retryDelayMs: 300,
        duplicateRate: 0.1,
        timeoutMs: 15_000,
      }).start();
      const firstAttempt = ledger.requests;
      await ledger.flowing(UNDER_LOAD);
      const from = Date.now();
      const OUTAGE_MS = outageMs(mode);
      const faults = (async () => {
        for (const step of PHASES[mode]) {
          if (step.fault === 'reset') proxy.reset();
          else proxy.silent();
          await sleep(step.ms);
        }
      })();
      // Probed like the chart's readinessProbe (timeoutSeconds 2): no answer in time is "not ready".
      const probes: Array<{ status: number; end: number }> = [];
      const probe = (async () => {
        while (Date.now() - from < OUTAGE_MS - 200) {
          const result = await send({
            port: service.adminPort,
            method: 'GET',
            path: '/readyz',
            timeoutMs: READINESS_TIMEOUT_MS,
          });
          probes.push({ status: result.status, end: Date.now() });
          await sleep(200);
        }
      })();
      await faults;
      proxy.pass();
      const to = Date.now();
      outages.push({ mode, from, to });
      await probe;
      const readiness = probes.filter((p) => p.end < to).map((p) => (p.status === 0 ? 'no answer' : String(p.status)));
      await ledger.flowing(UNDER_LOAD);
      try {
        await sender.finish(30_000);
      } finally {
        service.assertAlive();
      }

      const attempts = ledger.attempts.slice(firstAttempt);
      const during = attempts.filter((a) => a.result.startedAt >= from && a.result.startedAt < to);
      const refused = attempts.filter((a) => a.result.status === 503);
      const firstOkAfter = attempts
        .filter((a) => a.result.status === 200 && a.result.startedAt >= to)
        .map((a) => a.result.startedAt + a.result.ms);
      h.figure(`${mode}: requests (during the outage)`, `${attempts.length} (${during.length})`);
      h.figure(`${mode}: 503s`, refused.length);
      h.figure(`${mode}: max latency`, seconds(Math.max(0, ...attempts.map((a) => a.result.ms))));
      h.figure(
        `${mode}: first 200 after it healed`,
        firstOkAfter.length > 0 ? seconds(Math.min(...firstOkAfter) - to) : 'none',
      );
      h.figure(`${mode}: readiness during the outage`, [...new Set(readiness)].join('/'));

      expect(during.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(0);
      const wrong = attempts.filter((a) => a.result.status !== 200 && a.result.status !== 503);
      expect(
        wrong.map((a) => `${a.result.status} ${a.result.error ?? a.result.body.slice(0, 100)} after ${a.result.ms} ms`),
      ).toEqual([]);
      for (const a of refused) {
        expect(a.result.headers['retry-after']).toMatch(/^\d+$/);
        // README: 503 when the database cannot take the write now (unavailable, or the recorder is saturated).
        expect(JSON.parse(a.result.body)).toEqual({
          error: { code: expect.stringMatching(/^(database_unavailable|overloaded)$/), message: expect.any(String) },
        });
      }
      const slow = attempts.filter((a) => a.result.ms >= PATIENCE_MS);
      expect(slow.map((a) => `${a.result.status} after ${a.result.ms} ms`)).toEqual([]);
      expect(readiness.length).toBeGreaterThan(0);
      expect(readiness).not.toContain('200');
      expect((await getJson(service.adminPort, '/readyz')).status).toBe(200);
      expect(sender.notAccepted()).toEqual([]);
    }

    h.check(
      'the outbox relay retries the database at a bounded rate while it is unreachable (no busy loop)',
      async () => {
        // The relay polls every second when idle; a reconnect loop without a pause shows as a log flood.
        let attempts = 0;
        let outageMs = 0;
        for (const { from, to } of outages) {
          outageMs += to - from;
          for (const s of services) {
            attempts += s
              .jsonLogs()
              .filter(
                (l) =>
                  l.msg === 'outbox relay lost its database connection' &&
                  Date.parse(String(l.time)) >= from &&
                  Date.parse(String(l.time)) <= to,
              ).length;
          }
        }
        const perSecond = attempts / Math.max(1, outageMs / 1000);
        h.figure('relay reconnects per second of outage', perSecond.toFixed(1));
        expect(outages.length).toBeGreaterThan(0);
        expect(perSecond).toBeLessThanOrEqual(5);
      },
    );

    h.check(
      'no 200 without a commit; nothing half-written; every refused delivery is absent or was accepted later',
      async () => {
        const committed = await checkCommitted(database.url, ledger);
        const stored = await counts(database.url);
        h.trafficFigures(ledger, stored);
        h.figure('503s whose write was committed anyway', committed.storedWithoutOk);
        h.figure('max latency', seconds(ledger.maxLatencyMs()));
        h.figure('crashes', crashes.length === 0 ? 'none' : crashes.join(' / '));
        expect(committed.okButMissing).toEqual([]);
        expect(committed.unexplained).toEqual([]);
        expect(await consistencyViolations(database.url)).toEqual([]);
        expect(stored.deliveries).toBe(ledger.ok + committed.storedWithoutOk);
      },
    );

    h.eventsCheck(
      'every committed event is published once the database is back',
      database.url,
      () => consumer.messages,
    );

    h.check('stops cleanly (SIGTERM, exit code 0)', async () => {
      const exit = await service.stop();
      expect(exit).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => services);
  });
}
