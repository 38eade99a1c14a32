import { RELAY_LOCK } from '../../../src/outbox/outboxRelay';
import { RECONCILER_LOCK } from '../../../src/reconciliation/reconciler';
import { PaymentServiceDouble } from '../../../src/simulator/paymentServiceDouble';
import { EventConsumer } from '../../support/broker';
import { POS_ID } from '../../support/signing';
import { FaultProxy } from '../../support/faultProxy';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, pool, postNotification, summarizeAnswers, type HttpResult } from '../support/http';
import { sleep, waitUntil } from '../../support/wait';
import { Ingress } from '../support/ingress';
import { harness, seconds } from '../support/scenario';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { advisoryLockHolders, consistencyViolations, counts, pendingEventIds, recordsOf } from '../support/store';
import { cardLifecycles, checkCommitted, type Attempt, type CloudEventBody } from '../support/traffic';
import { secrets } from '../support/secrets';
import { ScenarioWorld } from '../support/world';

const REPLICAS = 3;
/** Orders whose every notification is sent to all three replicas at the same moment. */
const SAME_MOMENT_ORDERS = 8;
const DATABASE_CUT_MS = 3_000;
/** How long a terminating pod stays in the ingress's rotation after its SIGTERM. */
const ENDPOINT_LAG_MS = 300;
/** What a preStop sleep leaves between the endpoint's removal and SIGTERM. */
const PRE_STOP_MARGIN_MS = 200;
/** Each way, between the relays and RabbitMQ, from before the relay kill until its events are published again. */
const BROKER_LATENCY_MS = 500;
/** The relay's poll interval (1 s) is how often a standby tries the lock; this bound leaves room for a busy machine. */
const TAKEOVER_BOUND_MS = 10_000;

export const REPLICAS_SCENARIO: ScenarioDefinition = {
  id: 9,
  title: 'Three replicas on one database and one exchange, as the chart runs them',
  done:
    `Service processes each running its relay in-process (the chart's RELAY_ENABLED=true) and its reconciler (against a ` +
    'payment-API double), all on one database (through a TCP proxy) ' +
    'and one exchange, behind an ingress that picks a replica per request and passes refused connections to another. A sender ' +
    '(6 connections, card payments and refunds shuffled, 10% duplicates, 15% sent to 2 or 3 replicas at the same moment, refused ' +
    `deliveries sent again) runs throughout while: scaled from 1 to ${REPLICAS}; every notification of ${SAME_MOMENT_ORDERS} orders sent to all ` +
    `${REPLICAS} at once; the replica holding the relay lock SIGKILLed while events it published await their confirm (RabbitMQ made ` +
    `${BROKER_LATENCY_MS} ms away each way for it) and replaced; a rolling restart (surge first, as the chart's ` +
    `maxSurge 1 / maxUnavailable 0: start the successor, wait ready, delete the old one with a preStop sleep: its endpoint leaves the ingress ` +
    `${ENDPOINT_LAG_MS} ms later, SIGTERM ${PRE_STOP_MARGIN_MS} ms after that); ` +
    `Postgres reset for ${DATABASE_CUT_MS / 1000} s ` +
    `for all replicas; scaled back to 1 without preStop sleep (the chart's default: SIGTERM at once, the endpoint removed ${ENDPOINT_LAG_MS} ms later). ` +
    'A consumer checks every event.',
};

const RELAY_ACTIVE = 'outbox_relay_active';
const RECONCILER_ACTIVE = 'reconciler_active';
/** Answers to traffic sent after a change that a check waits for before it reads the answers around the change. */
const ANSWERS_AFTER = 20;
const API_CLIENT = { posId: POS_ID, clientId: `${POS_ID}-client`, clientSecret: 'Cs-5b8d2f4a1c-replicas-secret' };

/** The value of an unlabelled gauge in a /metrics text (null when absent). */
function gauge(metrics: string, name: string): number | null {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics);
  return match ? Number(match[1]) : null;
}

/** Answers that break "only 200, or 503 with Retry-After". */
function unexpectedAnswers(attempts: readonly Attempt[]): string[] {
  return attempts
    .filter((a) => a.result.status !== 200 && !(a.result.status === 503 && /^\d+$/.test(retryAfter(a.result))))
    .map((a) => `${a.result.status} ${a.result.error ?? a.result.body.slice(0, 100)} after ${a.result.ms} ms`);
}

const retryAfter = (result: HttpResult): string => String(result.headers['retry-after'] ?? '');

const describeAnswers = (attempts: readonly Attempt[]): string => summarizeAnswers(attempts.map((a) => a.result));

export function replicasScenario(report: RunReport): void {
  const h = harness(report, REPLICAS_SCENARIO);
  describe(`${REPLICAS_SCENARIO.id}. ${REPLICAS_SCENARIO.title}`, () => {
    const world = new ScenarioWorld('replicas');
    const { database, exchange, ledger, services } = world;
    const ingress = new Ingress();
    let proxy: FaultProxy;
    /** Between the replicas' relays and RabbitMQ: slowed around the kill so that it lands between a publish and its confirm. */
    let brokerProxy: FaultProxy;
    let consumer: EventConsumer;
    let sender: Sender;
    let started = 0;
    /** The payment API every replica's reconciler may ask (only the lock matters here). */
    const double = new PaymentServiceDouble({ clients: [API_CLIENT] });
    let apiUrl = '';
    /**
     * When requests could be cut: each SIGKILL's (from the signal to the exit seen: the requests in
     * flight on that replica), and those of SIGTERMs sent while the endpoint was still in rotation.
     */
    const cutWindows: Array<{ from: number; to: number }> = [];
    const cutIn =
      (windows: ReadonlyArray<{ from: number; to: number }>) =>
      (a: Attempt): boolean =>
        a.result.status === 0 &&
        windows.some((w) => a.result.startedAt <= w.to && a.result.startedAt + a.result.ms >= w.from);

    world.beforeStopping(() => sender?.halt());

    /** A new pod: started on the shared database and exchange, in rotation once ready. */
    const startReplica = async (): Promise<ServiceProcess> => {
      started += 1;
      const replica = await world.startService({
        label: `replica-${started}`,
        databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
        exchange,
        env: {
          AMQP_URL: `amqp://guest:guest@127.0.0.1:${brokerProxy.port}`,
          SHUTDOWN_TIMEOUT: '5s',
          PAYMENT_API_URL: apiUrl,
          PAYMENT_API_CREDENTIALS: `${API_CLIENT.posId}:${API_CLIENT.clientId}:${API_CLIENT.clientSecret}`,
          RECONCILE_INTERVAL: '500ms',
        },
      });
      ingress.add(replica);
      return replica;
    };

    /**
     * A pod deleted; its endpoint leaves the ingress ENDPOINT_LAG_MS later. With a preStop sleep (the
     * chart's preStopSleepSeconds) SIGTERM comes after that. Without one (the chart's default) it comes
     * at once, and a connection accepted in that instant can be reset before its request is read: the
     * sender gets no answer and sends it again (nginx would answer 502).
     */
    const stopReplica = async (replica: ServiceProcess, preStopSleep: boolean): Promise<void> => {
      const from = Date.now();
      if (preStopSleep) {
        await sleep(ENDPOINT_LAG_MS);
        ingress.remove(replica);
        await sleep(PRE_STOP_MARGIN_MS);
      }
      const exit = replica.stop();
      if (!preStopSleep) {
        await sleep(ENDPOINT_LAG_MS);
        ingress.remove(replica);
        cutWindows.push({ from, to: Date.now() });
      }
      expect(await exit).toMatchObject({ code: 0, signal: null });
    };

    /** Replicas in rotation whose /metrics shows `name` at 1 (the holders of a lock such as the relay's). */
    const holdersOf = async (name: string): Promise<ServiceProcess[]> => {
      const replicas = ingress.replicas;
      const values = await Promise.all(replicas.map(async (r) => gauge(await r.metricsText().catch(() => ''), name)));
      return replicas.filter((_, i) => values[i] === 1);
    };

    /** Until exactly one replica in rotation holds the lock behind `name`; the wait in ms. */
    const oneHolder = async (name: string, timeoutMs = TAKEOVER_BOUND_MS): Promise<number> => {
      const from = Date.now();
      await waitUntil(
        `exactly one replica reports ${name} 1`,
        async () => (await holdersOf(name)).length === 1,
        timeoutMs,
        50,
      );
      return Date.now() - from;
    };

    /** Waits until the sender has had ANSWERS_AFTER answers to attempts it started at or after `since`. */
    const answeredSince = (since: number): Promise<boolean> =>
      waitUntil(
        `${ANSWERS_AFTER} answers to notifications sent after the change`,
        () => ledger.count((a) => a.result.startedAt >= since) >= ANSWERS_AFTER,
        30_000,
      );

    /**
     * SIGKILL of the replica holding the lock behind gauge `name`, at the first moment `when` is
     * true, then the wait until another holds it; the killed pod is replaced, as its Deployment would.
     * Written for the relay, and for any other singleton across replicas (a reconciler) by its gauge.
     */
    const killHolderAndTakeOver = async (
      name: string,
      when: () => Promise<boolean> = async () => true,
    ): Promise<{ killed: ServiceProcess; takeoverMs: number; kill: { from: number; to: number } }> => {
      const [holder, ...others] = await holdersOf(name);
      expect({ holder: holder?.label, others: others.length }).toEqual({ holder: expect.any(String), others: 0 });
      const killed = holder as ServiceProcess;
      await waitUntil('the moment to kill', when, 20_000, 10);
      const kill = { from: Date.now(), to: 0 };
      killed.kill('SIGKILL');
      const exit = await killed.waitExit(5_000);
      expect(exit).toMatchObject({ signal: 'SIGKILL' });
      kill.to = exit?.at ?? Date.now();
      cutWindows.push(kill);
      ingress.remove(killed);
      await oneHolder(name);
      const takeoverMs = Date.now() - kill.from;
      await startReplica();
      return { killed, takeoverMs, kill };
    };

    h.check('starts: one replica behind the ingress, a consumer on the exchange, the sender under way', async () => {
      proxy = world.keep(await new FaultProxy(5432).start());
      brokerProxy = world.keep(await new FaultProxy(5672).start());
      consumer = world.keep(await new EventConsumer(exchange).start());
      secrets.add('payment API client secret', API_CLIENT.clientSecret);
      apiUrl = await double.start();
      world.keep(double);
      await startReplica();
      sender = new Sender({
        ingress,
        ledger,
        stream: new NoteStream('REP'),
        workers: 6,
        pauseMs: 20,
        retryDelayMs: 300,
        duplicateRate: 0.1,
        sameMomentRate: 0.15,
      }).start();
      await answeredSince(Date.now());
    });

    h.check(
      `3. scaled from 1 to ${REPLICAS} replicas mid-traffic: each new one takes traffic, one relay stays active`,
      async () => {
        const from = Date.now();
        while (ingress.replicas.length < REPLICAS) await startReplica();
        h.figure('scale 1 to 3', `${seconds(Date.now() - from)} until all ready`);
        const idle = () => ingress.replicas.filter((r) => (ingress.served.get(r.label) ?? 0) === 0);
        await waitUntil('every replica served a notification', () => idle().length === 0, 10_000).catch(() => false);
        expect(idle().map((r) => r.label)).toEqual([]);
        await oneHolder(RELAY_ACTIVE);
        await oneHolder(RECONCILER_ACTIVE);
        expect(await advisoryLockHolders(database.url, RELAY_LOCK)).toBe(1);
        expect(await advisoryLockHolders(database.url, RECONCILER_LOCK)).toBe(1);
        expect(unexpectedAnswers(ledger.attempts.filter((a) => a.result.startedAt >= from))).toEqual([]);
      },
      90_000,
    );

    h.check(
      `4. the same notification at the same moment on all ${REPLICAS} replicas: one record, one event, ${REPLICAS} deliveries`,
      async () => {
        const { notes, orderIds } = cardLifecycles('SAM', SAME_MOMENT_ORDERS);
        const replicas = ingress.replicas;
        expect(replicas.length).toBe(REPLICAS);
        const answers = new Map<string, string[]>();
        // Orders in parallel, each order's notifications in their lifecycle order, each one's copies at once.
        await pool(orderIds, SAME_MOMENT_ORDERS, async (orderId) => {
          for (const note of notes.filter((n) => n.orderId === orderId)) {
            // A copy refused (503 on a busy machine) is sent again to the same replica, as the payment service would.
            const results = await Promise.all(
              replicas.map(async (r) => {
                for (let attempt = 1; ; attempt += 1) {
                  const result = ledger.add(
                    note,
                    await postNotification(r.publicPort, note.body, { timeoutMs: 15_000 }),
                  );
                  if (result.status === 200 || attempt === 5) return result;
                  await sleep(300);
                }
              }),
            );
            answers.set(
              note.meaning,
              results.map((r) =>
                r.status === 200 ? (JSON.parse(r.body) as { outcome: string }).outcome : `HTTP ${r.status}`,
              ),
            );
          }
        });
        const wrongAnswers = [...answers]
          .filter(([, outcomes]) => [...outcomes].sort().join() !== 'accepted,duplicate,duplicate')
          .map(([meaning, outcomes]) => `${meaning}: ${outcomes.join('/')}`);
        const records = await recordsOf(
          database.url,
          notes.map((n) => n.meaning),
        );
        const wrongRecords = notes
          .map((n) => ({ meaning: n.meaning, records: records.filter((r) => r.meaning === n.meaning) }))
          .filter((x) => x.records.length !== 1 || x.records[0]?.deliveries !== REPLICAS || x.records[0]?.events !== 1)
          .map((x) => `${x.meaning}: ${JSON.stringify(x.records)}`);
        const orders = new Set(orderIds);
        await waitUntil(
          'the events of those orders consumed',
          () =>
            new Set(
              consumer
                .bodies<CloudEventBody>()
                .filter((e) => orders.has(e.subject))
                .map((e) => e.id),
            ).size >= notes.length,
          30_000,
        ).catch(() => 0);
        const consumed = consumer.bodies<CloudEventBody>().filter((e) => orders.has(e.subject));
        const idsPerNotification = new Map<string, Set<string>>();
        for (const e of consumed)
          idsPerNotification.set(
            e.data.notificationId,
            (idsPerNotification.get(e.data.notificationId) ?? new Set()).add(e.id),
          );
        h.figure(
          'same moment on three replicas',
          `${notes.length} notifications x ${REPLICAS} copies: ${records.length} records, ` +
            `${records.reduce((s, r) => s + r.deliveries, 0)} deliveries, ${records.reduce((s, r) => s + r.events, 0)} events, ` +
            `${idsPerNotification.size} notifications published`,
        );
        expect(wrongAnswers).toEqual([]);
        expect(wrongRecords).toEqual([]);
        expect(idsPerNotification.size).toBe(notes.length);
        expect([...idsPerNotification.values()].filter((ids) => ids.size !== 1)).toEqual([]);
      },
      60_000,
    );

    h.check(
      `1. SIGKILL of the replica whose relay is active: another takes over within ${TAKEOVER_BOUND_MS / 1000} s`,
      async () => {
        const before = ledger.requests;
        // With confirms 0.5 s on their way back, the kill is timed to land while events the consumer
        // already has are not marked published yet: the next relay must publish them again, same id.
        brokerProxy.latencyMs = BROKER_LATENCY_MS;
        let unmarked: string[] = [];
        const { killed, takeoverMs, kill } = await killHolderAndTakeOver(RELAY_ACTIVE, async () => {
          const pending = await pendingEventIds(database.url);
          unmarked = consumer.bodies<CloudEventBody>().flatMap((e) => (pending.has(e.id) ? [e.id] : []));
          return unmarked.length > 0;
        });
        const copies = (id: string): number => consumer.bodies<CloudEventBody>().filter((e) => e.id === id).length;
        await waitUntil(
          'the unmarked events published again',
          () => unmarked.every((id) => copies(id) >= 2),
          20_000,
        ).catch(() => 0);
        brokerProxy.latencyMs = 0;
        h.figure(
          'events the consumer had but the outbox had not marked at the kill',
          `${unmarked.length}, published again with the same id: ${unmarked.filter((id) => copies(id) >= 2).length}`,
        );
        h.figure('relay takeover after SIGKILL', `${seconds(takeoverMs)} (${killed.label} killed)`);
        h.figure('requests cut by the kill', ledger.attempts.slice(before).filter(cutIn([kill])).length);
        expect(unmarked.filter((id) => copies(id) < 2)).toEqual([]);
        expect(await advisoryLockHolders(database.url, RELAY_LOCK)).toBe(1);
        expect(ingress.replicas.length).toBe(REPLICAS);
      },
      60_000,
    );

    h.check(
      `6. SIGKILL of the replica whose reconciler is active: another takes over within ${TAKEOVER_BOUND_MS / 1000} s`,
      async () => {
        const before = ledger.requests;
        const { killed, takeoverMs, kill } = await killHolderAndTakeOver(RECONCILER_ACTIVE);
        h.figure('reconciler takeover after SIGKILL', `${seconds(takeoverMs)} (${killed.label} killed)`);
        h.figure('requests cut by the reconciler kill', ledger.attempts.slice(before).filter(cutIn([kill])).length);
        expect(await advisoryLockHolders(database.url, RECONCILER_LOCK)).toBe(1);
        expect(ingress.replicas.length).toBe(REPLICAS);
      },
      60_000,
    );

    h.check(
      '2. a rolling restart under traffic (successor ready, endpoint removed during a preStop sleep, SIGTERM): only 200s or 503 with Retry-After',
      async () => {
        const from = Date.now();
        const passedOn = ingress.passedOn;
        for (const old of ingress.replicas) {
          await startReplica();
          await stopReplica(old, true);
        }
        const replacedMs = Date.now() - from;
        await answeredSince(Date.now());
        const attempts = ledger.attempts.filter((a) => a.result.startedAt >= from);
        h.figure('rolling restart', `${REPLICAS} replicas replaced in ${seconds(replacedMs)}`);
        h.figure('answers during the rollout', describeAnswers(attempts));
        h.figure('connections refused and passed to another replica during the rollout', ingress.passedOn - passedOn);
        expect(unexpectedAnswers(attempts)).toEqual([]);
        await oneHolder(RELAY_ACTIVE);
      },
      120_000,
    );

    h.check(
      `5. Postgres unreachable for all replicas (${DATABASE_CUT_MS / 1000} s reset): all go unready, all recover`,
      async () => {
        const replicas = ingress.replicas;
        const unready = new Set<string>();
        const from = Date.now();
        proxy.reset();
        const cutEnds = from + DATABASE_CUT_MS;
        while (Date.now() < cutEnds) {
          const answers = await Promise.all(
            replicas.map((r) => getJson(r.adminPort, '/readyz').catch(() => ({ status: 0 }))),
          );
          answers.forEach((a, i) => a.status === 503 && unready.add((replicas[i] as ServiceProcess).label));
          await sleep(200);
        }
        proxy.pass();
        const to = Date.now();
        await waitUntil(
          'every replica ready again',
          async () =>
            (
              await Promise.all(replicas.map((r) => getJson(r.adminPort, '/readyz').catch(() => ({ status: 0 }))))
            ).every((a) => a.status === 200),
          30_000,
          100,
        );
        const recoveredMs = Date.now() - to;
        const relayBackMs = (await oneHolder(RELAY_ACTIVE, 30_000)) + recoveredMs;
        await answeredSince(to + 1_000);
        const attempts = ledger.attempts.filter((a) => a.result.startedAt >= from);
        h.figure('unready during the database cut', `${unready.size} of ${replicas.length}`);
        h.figure('all ready again after the cut', seconds(recoveredMs));
        h.figure('relay active again after the cut', seconds(relayBackMs));
        h.figure(
          'answers during the cut and after',
          describeAnswers(attempts.filter((a) => a.result.startedAt < to + 1_000)),
        );
        expect([...unready].sort()).toEqual(replicas.map((r) => r.label).sort());
        expect(unexpectedAnswers(attempts)).toEqual([]);
      },
      90_000,
    );

    h.check(
      `3. scaled back from ${REPLICAS} to 1 mid-traffic without preStop sleep: 200s, 503s with Retry-After, and no answer only at a SIGTERM; the last one runs the relay and the reconciler`,
      async () => {
        const from = Date.now();
        const windows = cutWindows.length;
        const passedOn = ingress.passedOn;
        for (const replica of ingress.replicas.slice(1)) await stopReplica(replica, false);
        await oneHolder(RELAY_ACTIVE);
        await oneHolder(RECONCILER_ACTIVE);
        await answeredSince(Date.now());
        const attempts = ledger.attempts.filter((a) => a.result.startedAt >= from);
        const cutBySigterm = attempts.filter(cutIn(cutWindows.slice(windows)));
        h.figure('scale 3 to 1', `answers ${describeAnswers(attempts)}`);
        h.figure('connections reset at a SIGTERM without preStop sleep (sent again)', cutBySigterm.length);
        h.figure('connections refused and passed to another replica while scaling in', ingress.passedOn - passedOn);
        expect(ingress.replicas.length).toBe(1);
        expect(unexpectedAnswers(attempts.filter((a) => !cutBySigterm.includes(a)))).toEqual([]);
      },
      90_000,
    );

    h.check(
      "the sender's retries are all accepted; every 200 is committed; only the SIGKILL and SIGTERMs without preStop sleep cut requests; nothing half-written",
      async () => {
        await sender.finish(30_000);
        const committed = await checkCommitted(database.url, ledger);
        const stored = await counts(database.url);
        h.trafficFigures(ledger, stored);
        h.figure('requests per replica', [...ingress.served].map(([k, v]) => `${k} ${v}`).join(', '));
        h.figure('max latency', seconds(ledger.maxLatencyMs((a) => a.result.status !== 0)));
        expect(sender.notAccepted()).toEqual([]);
        // A SIGKILL cuts the requests in flight on that replica, a SIGTERM without preStop sleep at most
        // a connection accepted in that instant: no answer, sent again by the sender.
        const cutElsewhere = ledger.attempts.filter((a) => a.result.status === 0 && !cutIn(cutWindows)(a));
        expect(unexpectedAnswers(ledger.attempts.filter((a) => a.result.status !== 0))).toEqual([]);
        expect(describeAnswers(cutElsewhere)).toBe('none');
        expect(committed.okButMissing).toEqual([]);
        expect(committed.unexplained).toEqual([]);
        expect(await consistencyViolations(database.url)).toEqual([]);
      },
      60_000,
    );

    h.eventsCheck(
      'every committed event reached the consumer: ids kept on redelivery, each order in data.sequence order without a gap',
      database.url,
      () => consumer.messages,
      45_000,
    );

    h.check('the last replica stops cleanly (SIGTERM, exit code 0)', async () => {
      for (const replica of ingress.replicas) await stopReplica(replica, false);
    });

    h.secretsCheck(() => services);
  });
}
