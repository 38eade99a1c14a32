import { EventConsumer } from '../../support/broker';
import type { RunReport, ScenarioDefinition } from '../report';
import { FaultProxy } from '../../support/faultProxy';
import { getJson } from '../support/http';
import { sleep, waitUntil } from '../../support/wait';
import { harness, seconds } from '../support/scenario';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts } from '../support/store';
import { checkCommitted, Ledger, waitForEvents } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

const OUTAGE_MS = 4_000;
const SHUTDOWN_TIMEOUT_MS = 4_000;
/** As in scenario 4: closing the relay, the admin port and the pool; main.ts forces exit 1 at +5 s. */
const EXIT_MARGIN_MS = 3_000;
/** Notifications accepted before a fault, and after it: the service is under load when it comes and goes. */
const UNDER_LOAD = 50;

export const BROKER_OUTAGE: ScenarioDefinition = {
  id: 2,
  title: 'Broker unreachable for a while under traffic',
  done:
    'A paced sender (6 connections, card payments and refunds, 10% duplicates) while RabbitMQ, behind a TCP proxy, is cut ' +
    `twice for ${OUTAGE_MS / 1000} s: reset (connections dropped, new ones refused), then silent (no answer, no RST); ` +
    'a consumer bound to the exchange directly collects every event. Then SIGTERM under traffic while the broker is silent.',
};

export function brokerOutageScenario(report: RunReport): void {
  const h = harness(report, BROKER_OUTAGE);
  describe(`${BROKER_OUTAGE.id}. ${BROKER_OUTAGE.title}`, () => {
    const world = new ScenarioWorld('brkout');
    const { database, exchange, ledger, services } = world;
    const stream = new NoteStream('BRK');
    let proxy: FaultProxy;
    let service: ServiceProcess;
    let consumer: EventConsumer;
    const outages: Array<{ from: number; to: number }> = [];

    h.check('starts with RabbitMQ behind a TCP proxy', async () => {
      consumer = world.keep(await new EventConsumer(exchange).start());
      proxy = world.keep(await new FaultProxy(5672).start());
      service = await world.startService({
        label: 'broker-outage',
        databaseUrl: database.url,
        exchange,
        env: { AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}` },
      });
    });

    for (const mode of ['reset', 'silent'] as const) {
      h.check(
        `${mode}: every notification still gets 200 and readiness stays true while the broker is away`,
        async () => {
          const sender = new Sender({
            port: () => service.publicPort,
            alive: () => service.running,
            ledger,
            stream,
            workers: 6,
            pauseMs: 15,
            retryDelayMs: 300,
            duplicateRate: 0.1,
          }).start();
          const firstAttempt = ledger.requests;
          await ledger.flowing(UNDER_LOAD);
          const from = Date.now();
          if (mode === 'reset') proxy.reset();
          else proxy.silent();
          const readiness: number[] = [];
          while (Date.now() - from < OUTAGE_MS) {
            readiness.push((await getJson(service.adminPort, '/readyz').catch(() => ({ status: 0 }))).status);
            await sleep(250);
          }
          const pendingDuring = (await counts(database.url)).pendingEvents;
          proxy.pass();
          outages.push({ from, to: Date.now() });
          await ledger.flowing(UNDER_LOAD);
          try {
            await sender.finish(20_000);
          } finally {
            service.assertAlive();
          }
          const attempts = ledger.attempts.slice(firstAttempt);
          h.figure(
            `${mode}: requests (200s)`,
            `${attempts.length} (${attempts.filter((a) => a.result.status === 200).length})`,
          );
          h.figure(`${mode}: events waiting in the outbox at the end of the outage`, pendingDuring);
          expect(
            attempts
              .filter((a) => a.result.status !== 200)
              .map((a) => `${a.result.status} ${a.result.error ?? a.result.body.slice(0, 80)}`),
          ).toEqual([]);
          expect([...new Set(readiness)]).toEqual([200]);
          expect(pendingDuring).toBeGreaterThan(0);
        },
      );
    }

    h.check(
      'after recovery every committed event is published, exactly once per event id (repeats only with the same id)',
      async () => {
        const drained = Date.now();
        const events = await waitForEvents(database.url, consumer.messages, 45_000);
        h.figure(
          'events',
          `${events.outboxEvents} committed, ${events.distinctConsumed} consumed, ${events.redeliveries} redelivered with the same id`,
        );
        h.figure('drain after the last outage', seconds(Date.now() - (outages[outages.length - 1]?.to ?? drained)));
        expect(events.problems).toEqual([]);
        expect(events.pending).toBe(0);
        expect(events.distinctConsumed).toBe(events.outboxEvents);
      },
      60_000,
    );

    h.check('the relay saw the outage (connection failures counted) and holds a broker connection again', async () => {
      await waitUntil(
        'amqp_connection_up 1',
        async () => /^amqp_connection_up 1$/m.test(await service.metricsText()),
        20_000,
      );
      const metrics = await service.metricsText();
      const failures = [...metrics.matchAll(/^outbox_publish_failures_total\{reason="(\w+)"\} (\d+)/gm)].map(
        (m) => `${m[1]}=${m[2]}`,
      );
      h.figure('publish failures counted', failures.join(', '));
      expect(metrics).toMatch(/^outbox_publish_failures_total\{reason="connection"\} [1-9]/m);
    });

    h.check('the relay retries the broker at a bounded rate while it is unreachable (no busy loop)', async () => {
      let attempts = 0;
      let outageMs = 0;
      for (const { from, to } of outages) {
        outageMs += to - from;
        attempts += service
          .jsonLogs()
          .filter(
            (l) =>
              l.msg === 'broker unreachable; events wait in the outbox' &&
              Date.parse(String(l.time)) >= from &&
              Date.parse(String(l.time)) <= to,
          ).length;
      }
      const perSecond = attempts / Math.max(1, outageMs / 1000);
      h.figure('broker reconnects per second of outage', perSecond.toFixed(1));
      expect(perSecond).toBeLessThanOrEqual(5);
    });

    h.check('every 200 is committed and nothing is half-written', async () => {
      const committed = await checkCommitted(database.url, ledger);
      const stored = await counts(database.url);
      h.figure('requests', ledger.requests);
      h.figure('200s', ledger.ok);
      h.figure('rows', `${stored.notifications} notifications, ${stored.deliveries} deliveries`);
      h.figure('max latency', seconds(ledger.maxLatencyMs()));
      expect(committed.okButMissing).toEqual([]);
      expect(committed.unexplained).toEqual([]);
      expect(stored.deliveries).toBe(ledger.ok);
      expect(await consistencyViolations(database.url)).toEqual([]);
    });

    h.check('stops cleanly (SIGTERM, exit code 0)', async () => {
      expect(await service.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.check(
      `during a broker partition, SIGTERM still ends in exit code 0 within SHUTDOWN_TIMEOUT + ${EXIT_MARGIN_MS / 1000} s`,
      async () => {
        service = await world.startService({
          label: 'broker-outage-partition',
          databaseUrl: database.url,
          exchange,
          env: { AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`, SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms` },
        });
        const partitionLedger = new Ledger();
        const sender = new Sender({
          port: () => service.publicPort,
          ledger: partitionLedger,
          stream,
          workers: 4,
          pauseMs: 10,
          retryDelayMs: 100_000,
        }).start();
        try {
          await partitionLedger.flowing(UNDER_LOAD);
          proxy.silent();
          // The relay is stuck on the silent broker: events wait in the outbox.
          await waitUntil(
            'events waiting for the silent broker',
            async () => (await service.gauge('outbox_pending_events')) > 0,
          );
          const term = Date.now();
          service.kill('SIGTERM');
          const exit = await service.waitExit(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 10_000);
          h.figure(
            'SIGTERM during a broker partition',
            `exit code ${exit?.code ?? 'none'} after ${seconds((exit?.at ?? Date.now()) - term)}`,
          );
          expect({
            code: exit?.code,
            signal: exit?.signal,
            withinBound: exit !== null && exit.at - term <= SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS,
          }).toEqual({
            code: 0,
            signal: null,
            withinBound: true,
          });
        } finally {
          await sender.halt();
          proxy.pass();
          await service.stop();
        }
      },
      SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 30_000,
    );

    h.check(
      'after the partition heals, every committed event is published',
      async () => {
        service = await world.startService({
          label: 'broker-outage-drain',
          databaseUrl: database.url,
          exchange,
          env: { AMQP_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}` },
        });
        const events = await waitForEvents(database.url, consumer.messages, 30_000);
        expect(events.problems).toEqual([]);
        expect(events.pending).toBe(0);
        expect(await service.stop()).toMatchObject({ code: 0, signal: null });
      },
      45_000,
    );

    h.secretsCheck(() => services);
  });
}
