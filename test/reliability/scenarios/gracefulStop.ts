import { EventConsumer } from '../../support/broker';
import type { RunReport, ScenarioDefinition } from '../report';
import { FaultProxy } from '../../support/faultProxy';
import {
  holdRequest,
  notificationHeaders,
  portAccepts,
  send,
  summarizeAnswers,
  type HeldRequest,
  type HttpResult,
} from '../support/http';
import { sleep, waitUntil } from '../../support/wait';
import { harness, seconds } from '../support/scenario';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts, meanings, outbox } from '../support/store';
import { checkCommitted, checkEvents, Ledger, waitForEvents, type Note } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

const SHUTDOWN_TIMEOUT_MS = 4_000;
/** Beyond SHUTDOWN_TIMEOUT: a relay slower than the drain, the admin port and the pool (main.ts forces exit 1 at +5 s). */
const EXIT_MARGIN_MS = 3_000;
const HELD = 3;
/** Notifications accepted before a fault: the service is under load when it comes. */
const UNDER_LOAD = 50;

export const GRACEFUL_STOP: ScenarioDefinition = {
  id: 4,
  title: 'Graceful stop (SIGTERM) under load',
  done:
    `SIGTERM while a sender posts continuously (4 connections) and ${HELD} requests are half-sent (headers and half the body), ` +
    `plus one that never completes; SHUTDOWN_TIMEOUT ${SHUTDOWN_TIMEOUT_MS / 1000} s. After SIGTERM: readiness polled, a new connection tried, ` +
    'the held requests completed; then the exit awaited, and the service restarted to drain the outbox. Then SIGTERM again, ' +
    'under traffic, while Postgres (behind a proxy) is silent (a network partition), with DATABASE_TIMEOUT 10 s so that ' +
    'every request in flight is still waiting when the stop cuts the connections.',
};

export function gracefulStopScenario(report: RunReport): void {
  const h = harness(report, GRACEFUL_STOP);
  describe(`${GRACEFUL_STOP.id}. ${GRACEFUL_STOP.title}`, () => {
    const world = new ScenarioWorld('term');
    const { database, exchange, ledger, services } = world;
    const stream = new NoteStream('TRM');
    let service: ServiceProcess;
    let consumer: EventConsumer;
    let sender: Sender;
    let termAt = 0;
    let exitMs = 0;
    const held: Array<{ note: Note; request: HeldRequest; result?: HttpResult }> = [];
    let stuck: HeldRequest;
    let stuckNote: Note;
    let readinessOffMs = 0;
    let refusedNew = false;

    world.beforeStopping(() => sender?.halt());

    h.check('starts', async () => {
      consumer = world.keep(await new EventConsumer(exchange).start());
      service = await world.startService({
        label: 'graceful-stop-1',
        databaseUrl: database.url,
        exchange,
        env: { SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms` },
      });
    });

    h.check(
      'on SIGTERM readiness turns false first, new connections are refused, and the requests already in flight are answered 200',
      async () => {
        sender = new Sender({
          port: () => service.publicPort,
          ledger,
          stream,
          workers: 4,
          pauseMs: 10,
          retryDelayMs: 100_000,
        }).start();
        await ledger.flowing(UNDER_LOAD);
        for (let i = 0; i < HELD; i += 1) {
          const note = stream.next();
          held.push({ note, request: holdRequest(service.publicPort, note.body, notificationHeaders(note.body)) });
        }
        stuckNote = stream.next();
        stuck = holdRequest(service.publicPort, stuckNote.body, notificationHeaders(stuckNote.body));
        // Every held request has reached the service, which is reading its body (reserved in the unverified budget).
        const heldBytes = [...held.map((h) => h.note.body), stuckNote.body].reduce((sum, b) => sum + b.length, 0);
        await waitUntil(
          'the held requests being read',
          async () => (await service.gauge('intake_unverified_body_bytes')) >= heldBytes,
        );

        termAt = Date.now();
        service.kill('SIGTERM');
        await waitUntil(
          'readiness false after SIGTERM',
          async () =>
            (await send({ port: service.adminPort, method: 'GET', path: '/readyz', timeoutMs: 2_000 })).status === 503,
          3_000,
          20,
        );
        readinessOffMs = Date.now() - termAt;
        refusedNew = !(await portAccepts(service.publicPort));
        // Readiness was already false while these requests were still being read.
        for (const x of held) x.request.complete();
        for (const x of held) x.result = await x.request.result;
        await sender.halt();

        h.figure('readiness false after SIGTERM', seconds(readinessOffMs));
        expect(refusedNew).toBe(true);
        expect(held.map((x) => x.result?.status)).toEqual(held.map(() => 200));
      },
    );

    h.check(
      `the process exits with code 0 within SHUTDOWN_TIMEOUT + ${EXIT_MARGIN_MS / 1000} s, cutting the request that never completed`,
      async () => {
        const exit = await service.waitExit(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 5_000);
        exitMs = (exit?.at ?? Date.now()) - termAt;
        h.figure('exit after SIGTERM', `${seconds(exitMs)} (code ${exit?.code ?? 'none'})`);
        const stuckResult = await stuck.result;
        h.figure(
          'never-completed request',
          stuckResult.status === 0 ? `connection closed (${stuckResult.error})` : `answered ${stuckResult.status}`,
        );
        expect(exit).toMatchObject({ code: 0, signal: null });
        expect(exitMs).toBeLessThanOrEqual(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS);
        expect(stuckResult.status).not.toBe(200);
      },
      SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 10_000,
    );

    h.check(
      'the shutdown ran in the documented order: readiness off, the relay stopped after its batch while requests drained, then stopped',
      async () => {
        const logs = service.jsonLogs().filter((l) => typeof l.time === 'string' && Date.parse(l.time) >= termAt - 10);
        const index = (msg: string): number => logs.findIndex((l) => l.msg === msg);
        const signal = index('signal received');
        const stopping = index('stopping: readiness off, draining requests');
        const relayOff = logs.findIndex((l) => l.msg === 'outbox relay is standing by');
        const stopped = index('stopped');
        h.figure(
          'shutdown log order',
          `signal ${signal}, readiness off ${stopping}, relay off ${relayOff}, stopped ${stopped}`,
        );
        if (!(signal < stopping && stopping < relayOff && relayOff < stopped))
          h.figure('shutdown log', logs.map((l) => String(l.msg)).join(' | '));
        expect(signal).toBeGreaterThanOrEqual(0);
        expect(stopping).toBeGreaterThan(signal);
        expect(relayOff).toBeGreaterThan(stopping);
        expect(stopped).toBeGreaterThan(relayOff);
      },
    );

    h.check(
      'every 200 was committed; deliveries sent well before SIGTERM were all answered; the unfinished one left nothing',
      async () => {
        for (const x of held) if (x.result) ledger.add(x.note, x.result);
        const committed = await checkCommitted(database.url, ledger);
        const stored = await counts(database.url);
        const cut = ledger.attempts.filter(
          (a) => a.result.status === 0 && a.result.sentAt !== null && a.result.sentAt < termAt - 1_000,
        );
        const afterTerm = ledger.attempts.filter((a) => a.result.startedAt >= termAt);
        h.figure('requests', ledger.requests);
        h.figure('200s', ledger.ok);
        h.figure(
          'unanswered',
          `${ledger.unanswered} (all sent after SIGTERM or within 1 s of it: ${cut.length === 0 ? 'yes' : 'no'})`,
        );
        h.figure('sender after SIGTERM', summarizeAnswers(afterTerm.map((a) => a.result)));
        h.figure('rows', `${stored.notifications} notifications, ${stored.deliveries} deliveries`);
        h.figure('max latency', seconds(ledger.maxLatencyMs((a) => a.result.status !== 0)));
        expect(committed.okButMissing).toEqual([]);
        expect(committed.unexplained).toEqual([]);
        expect(cut.map((a) => `${a.result.error} sent ${termAt - (a.result.sentAt ?? 0)} ms before SIGTERM`)).toEqual(
          [],
        );
        expect((await meanings(database.url)).has(stuckNote.meaning)).toBe(false);
        expect(await consistencyViolations(database.url)).toEqual([]);
      },
    );

    h.check(
      'the relay left no batch half-done: the events marked published are exactly those the consumer received',
      async () => {
        const published = new Set((await outbox(database.url)).filter((r) => r.published).map((r) => r.id));
        await waitUntil(
          'the consumer has every published event',
          () => {
            const seen = new Set(consumer.bodies<{ id: string }>().map((b) => b.id));
            return [...published].every((id) => seen.has(id));
          },
          10_000,
        ).catch(() => 0);
        // A pause that checks nothing beyond the published events arrives: as long as a confirmed message takes to
        // reach the consumer (a few ms on one machine), with room to spare.
        await sleep(300);
        const seen = new Set(consumer.bodies<{ id: string }>().map((b) => b.id));
        h.figure(
          'events at exit',
          `${published.size} published, ${(await counts(database.url)).pendingEvents} left for the next start`,
        );
        expect([...published].filter((id) => !seen.has(id))).toEqual([]);
        expect([...seen].filter((id) => !published.has(id))).toEqual([]);
      },
    );

    h.check(
      'started again on the same database, the events left behind are published and a stop without load is quick',
      async () => {
        service = await world.startService({
          label: 'graceful-stop-2',
          databaseUrl: database.url,
          exchange,
          env: { SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms` },
        });
        const events = await waitForEvents(database.url, consumer.messages, 30_000);
        h.figure(
          'events',
          `${events.outboxEvents} committed, ${events.distinctConsumed} consumed, ${events.redeliveries} redelivered with the same id`,
        );
        expect(events.problems).toEqual([]);
        expect(events.pending).toBe(0);
        const started = Date.now();
        const exit = await service.stop();
        h.figure('idle stop', seconds(Date.now() - started));
        expect(exit).toMatchObject({ code: 0, signal: null });
        expect((await checkEvents(database.url, consumer.messages)).problems).toEqual([]);
      },
      45_000,
    );

    h.check(
      `during a database partition, SIGTERM still ends in exit code 0 within SHUTDOWN_TIMEOUT + ${EXIT_MARGIN_MS / 1000} s and in-flight requests are answered 503`,
      async () => {
        const proxy = await new FaultProxy(5432).start();
        try {
          service = await world.startService({
            label: 'graceful-stop-partition',
            databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
            exchange,
            // A notification's answer time (DATABASE_TIMEOUT plus a second) outlasts the stop: every request
            // in flight is still waiting when the stop cuts the connections, and must be answered 503 first.
            env: { SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms`, DATABASE_TIMEOUT: '10s' },
          });
          const partitionLedger = new Ledger();
          const workers = 4;
          const partitionSender = new Sender({
            port: () => service.publicPort,
            ledger: partitionLedger,
            stream,
            workers,
            pauseMs: 10,
            retryDelayMs: 100_000,
          }).start();
          await partitionLedger.flowing(UNDER_LOAD);
          proxy.silent();
          // Every worker's request is in the service, stuck behind the silent database: none answered for a
          // while. (Not the recorder's gauge: /metrics reads the outbox's backlog, which waits on the database.)
          await waitUntil('every request in flight waiting on the database', async () => {
            const answered = partitionLedger.attempts.length;
            await sleep(300);
            return partitionSender.unanswered === workers && partitionLedger.attempts.length === answered;
          });
          const term = Date.now();
          service.kill('SIGTERM');
          const exit = await service.waitExit(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 10_000);
          await partitionSender.halt();
          const inFlight = partitionLedger.attempts.filter(
            (a) => a.result.startedAt < term && a.result.startedAt + a.result.ms > term,
          );
          h.figure(
            'SIGTERM during a database partition',
            `exit code ${exit?.code ?? 'none'} after ${seconds((exit?.at ?? Date.now()) - term)}; in-flight requests: ${summarizeAnswers(inFlight.map((a) => a.result))}`,
          );
          expect(inFlight.length).toBeGreaterThan(0);
          expect(summarizeAnswers(inFlight.map((a) => a.result))).toBe(`503 x${inFlight.length}`);
          for (const { result } of inFlight) {
            expect(JSON.parse(result.body)).toEqual({
              error: { code: 'shutting_down', message: expect.any(String) },
            });
          }
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
          proxy.pass();
          await service.stop();
          await proxy.stop();
        }
      },
      SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS + 30_000,
    );

    h.secretsCheck(() => services);
  });
}
