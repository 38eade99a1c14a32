import { randomBytes } from 'node:crypto';
import { PaymentEventConsumer } from '../../../examples/consumer/src/consumer';
import { ensureDatabaseExists } from '../../../src/database/pool';
import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator/paymentServiceDouble';
import { AMQP_URL, deleteQueue } from '../../support/broker';
import { query, testDatabase } from '../../support/database';
import { POS_ID } from '../../support/signing';
import { sleep, waitUntil } from '../../support/wait';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, postNotification } from '../support/http';
import { harness, percentile, seconds } from '../support/scenario';
import { secrets } from '../support/secrets';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { StandbyPair } from '../support/standbyPair';
import { counts, meanings } from '../support/store';
import type { Note } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

/** Seconds of load before the cut, between the cut and the kill (the lost window), and after the promotion. */
const BEFORE_CUT_S = 5;
const CUT_TO_KILL_S = 12;
const AFTER_PROMOTION_S = 10;
/** The sender's pace: workers, each pausing this long between two requests (about 16 notifications a second). */
const WORKERS = 4;
const PAUSE_MS = 250;
/** The promise: every status acknowledged up to this long before the kill is back within a minute. */
const ACKNOWLEDGED_BEFORE_KILL_MS = 1000;
const RESTORED_WITHIN_MS = 60_000;

const CLIENT: DoubleClient = {
  posId: POS_ID,
  clientId: `${POS_ID}-failover`,
  clientSecret: 'Cs-5b1e8d2c-failover-secret',
};

export const FAILOVER: ScenarioDefinition = {
  id: 13,
  title: 'A database failover that lost its last seconds',
  done:
    'Two Postgres clusters of the test’s own, a primary and a streaming standby (asynchronous), the standby fed ' +
    'through a replication proxy and the service reaching the database through a front proxy, as through a ' +
    `Kubernetes Service; the service with its default settings, a payment-API double told every status and the ` +
    `reference consumer (examples/consumer) bound to the exchange. A sender like the payment service (card payments, ` +
    `some refunded, out of order in small batches, each notification sent until it is answered 200, ${WORKERS} workers) ` +
    `for ${BEFORE_CUT_S} s; then the replication cut (the standby stops receiving WAL while the primary acknowledges), ` +
    `${CUT_TO_KILL_S} s more of load, the primary killed (immediate stop) and the standby promoted, the front proxy ` +
    `switched to it; ${AFTER_PROMOTION_S} s more of load. Compared: every status acknowledged with the promoted ` +
    'database, the failover the service reports, the consumer with the service. Then the same with a synchronous ' +
    'standby (synchronous_standby_names=*): commits timed with the standby in step, then writes while it is cut, ' +
    'readiness meanwhile, and the promotion.',
};

/** A status acknowledged: the notification, and when its 200 came. */
interface Acknowledged {
  note: Note;
  at: number;
}

/** Every status answered 200, from the sender's ledger: the first 200 of each notification. */
function acknowledged(sender: Sender, ledger: ScenarioWorld['ledger']): Acknowledged[] {
  const first = new Map<string, Acknowledged>();
  for (const { note, result } of ledger.attempts)
    if (result.status === 200 && !first.has(note.sha)) first.set(note.sha, { note, at: result.startedAt + result.ms });
  return [...sender.sent.values()].flatMap((note) => first.get(note.sha) ?? []);
}

/** The service's projections and the reference consumer's, as comparable lines. */
async function bothSides(serviceUrl: string, consumerUrl: string): Promise<{ service: string[]; consumer: string[] }> {
  const lines = async (url: string, orders: string, refunds: string): Promise<string[]> =>
    [
      ...(await query<{ line: string }>(
        url,
        `SELECT concat_ws(' ', 'order', order_id, status) AS line FROM ${orders}`,
      )),
      ...(await query<{ line: string }>(
        url,
        `SELECT concat_ws(' ', 'refund', refund_id, status) AS line FROM ${refunds}`,
      )),
    ]
      .map((r) => r.line)
      .sort();
  return {
    service: await lines(serviceUrl, 'orders', 'refunds'),
    consumer: await lines(consumerUrl, 'payments', 'refunds'),
  };
}

/** One new notification at a time, `count` of them: each one's time to its answer, when it was 200. */
async function timedOneByOne(port: number, prefix: string, count: number): Promise<number[]> {
  const stream = new NoteStream(prefix);
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const result = await postNotification(port, stream.next().body, { timeoutMs: 15_000 });
    if (result.status === 200) times.push(result.ms);
  }
  return times;
}

const p50p90 = (times: readonly number[]): string =>
  `${percentile(times, 50).toFixed(1)} / ${percentile(times, 90).toFixed(1)} ms (${times.length} in turn)`;

export function failoverScenario(report: RunReport): void {
  const h = harness(report, FAILOVER);
  describe(`${FAILOVER.id}. ${FAILOVER.title}`, () => {
    const world = new ScenarioWorld('failover');
    const { exchange, ledger } = world;
    const double = new PaymentServiceDouble({ clients: [CLIENT] });
    const consumerDb = testDatabase('nr_failover_consumer');
    const queue = `test.failover.${randomBytes(4).toString('hex')}`;
    let pair: StandbyPair;
    let service: ServiceProcess;
    let consumer: PaymentEventConsumer;
    let sender: Sender;
    let killedAt = 0;
    let promotedAt = 0;
    let cutAt = 0;

    afterAll(async () => {
      await consumer?.stop().catch(() => undefined);
      await pair?.stop();
      await consumerDb.drop();
      await deleteQueue(queue);
      await deleteQueue(`${queue}.dead`);
    });

    h.check(
      'starts: a primary and a streaming standby, the payment-API double, the reference consumer, the service',
      async () => {
        secrets.add('payment API client secret', CLIENT.clientSecret);
        pair = await StandbyPair.start();
        secrets.add('standby pair password', decodeURIComponent(new URL(pair.databaseUrl).password));
        const apiUrl = await double.start();
        world.keep(double);
        await ensureDatabaseExists(consumerDb.url);
        consumer = new PaymentEventConsumer({
          amqpUrl: AMQP_URL,
          exchange,
          queue,
          bindings: ['order.*', 'refund.*'],
          databaseUrl: consumerDb.url,
          retryMs: 100,
        });
        await consumer.start();
        service = await world.startService({
          label: 'failover',
          databaseUrl: pair.databaseUrl,
          exchange,
          env: {
            PAYMENT_API_URL: apiUrl,
            PAYMENT_API_CREDENTIALS: `${CLIENT.posId}:${CLIENT.clientId}:${CLIENT.clientSecret}`,
          },
        });
        h.figure('standby pair started in', seconds(pair.timings.startMs));
        h.figure(
          'a notification with an asynchronous standby, p50 / p90',
          p50p90(await timedOneByOne(service.publicPort, 'FOASYNC', 40)),
        );
      },
      180_000,
    );

    h.check(
      `load for ${BEFORE_CUT_S} s, the standby cut for ${CUT_TO_KILL_S} s, the primary killed, the standby promoted`,
      async () => {
        const stream = new NoteStream('FAILOVER');
        // Every status is the payment API's truth as soon as it is sent.
        const told: Pick<NoteStream, 'next' | 'orderIds'> = {
          orderIds: stream.orderIds,
          next: () => {
            const note = stream.next();
            double.learn(note.body);
            return note;
          },
        };
        sender = new Sender({
          port: () => service.publicPort,
          ledger,
          stream: told as NoteStream,
          workers: WORKERS,
          pauseMs: PAUSE_MS,
          retryDelayMs: 500,
        }).start();
        world.beforeStopping(() => sender.halt());
        await sleep(BEFORE_CUT_S * 1000);
        pair.cutReplication();
        cutAt = Date.now();
        await sleep(CUT_TO_KILL_S * 1000);
        await pair.killPrimary();
        killedAt = Date.now();
        await pair.promoteStandby();
        promotedAt = Date.now();
        await sleep(AFTER_PROMOTION_S * 1000);
        await sender.finish(60_000);
        h.figure('promotion', `${seconds(promotedAt - killedAt)} after the kill`);
        h.trafficFigures(ledger, await counts(pair.databaseUrl));
      },
      180_000,
    );

    h.check('the failover is noticed and said: an error log line, the counter, the failover recorded', async () => {
      await waitUntil(
        'the failover noticed',
        () => service.logs.some((l) => l.includes('"level":50') && l.includes('the database failed over')),
        30_000,
      );
      const [failover] = await query<{ cause: string; noticed_at: Date }>(
        pair.databaseUrl,
        'SELECT cause, noticed_at FROM failovers ORDER BY id',
      );
      expect(failover?.cause).toBe('timeline');
      h.figure('noticed', `${seconds((failover?.noticed_at.getTime() ?? 0) - promotedAt)} after the promotion`);
      expect(await service.metricsText()).toMatch(/database_failovers_total\{cause="timeline"\} [1-9]/);
    });

    h.check(
      `within a minute of the switch, every status acknowledged up to ${ACKNOWLEDGED_BEFORE_KILL_MS} ms before the kill is back`,
      async () => {
        const all = acknowledged(sender, ledger);
        const inWindow = all.filter((a) => a.at >= cutAt && a.at <= killedAt);
        const promised = all.filter((a) => a.at <= killedAt - ACKNOWLEDGED_BEFORE_KILL_MS);
        let missing: Acknowledged[] = [];
        const backAt = await waitUntil(
          'every acknowledged status back',
          async () => {
            const recorded = await meanings(pair.databaseUrl);
            missing = promised.filter((a) => !recorded.has(a.note.meaning));
            return missing.length === 0 && Date.now();
          },
          RESTORED_WITHIN_MS,
          500,
        ).catch((error: unknown) => {
          throw new Error(
            `${missing.length} acknowledged statuses not back: ${missing
              .slice(0, 10)
              .map((m) => m.note.meaning)
              .join(', ')} (${(error as Error).message})`,
          );
        });
        const [failover] = await query<{ restored: number; journal_problem: string | null; restored_at: Date | null }>(
          pair.databaseUrl,
          'SELECT restored, journal_problem, restored_at FROM failovers ORDER BY id',
        );
        expect(failover?.journal_problem).toBeNull();
        const recorded = await meanings(pair.databaseUrl);
        const lastSecond = all.filter((a) => a.at > killedAt - ACKNOWLEDGED_BEFORE_KILL_MS && a.at <= killedAt);
        h.figure('acknowledged between the cut and the kill', inWindow.length);
        h.figure(
          'restored from the journal',
          `${failover?.restored ?? 0}, ${seconds((failover?.restored_at?.getTime() ?? backAt) - promotedAt)} after the promotion`,
        );
        h.figure(
          'acknowledged in the last second before the kill',
          `${lastSecond.length}, of which ${lastSecond.filter((a) => !recorded.has(a.note.meaning)).length} not back`,
        );
      },
      RESTORED_WITHIN_MS + 30_000,
    );

    h.check('the reference consumer ends equal to the service', async () => {
      const sides = await waitUntil(
        'the consumer equal to the service',
        async () => {
          const both = await bothSides(pair.databaseUrl, consumerDb.url);
          return JSON.stringify(both.service) === JSON.stringify(both.consumer) && both;
        },
        60_000,
        500,
      ).catch(async () => bothSides(pair.databaseUrl, consumerDb.url));
      expect(sides.consumer).toEqual(sides.service);
      h.figure('consumer', `${consumer.stats.applied} applied, ${consumer.stats.duplicates} duplicates ignored`);
    });

    // The residual the journal may not hold (what it had not yet confirmed when the primary died) is covered by
    // reconciling every order of the window before the failover: how many, and how many no check could settle.
    h.check(
      'the window before the failover is reconciled, and what it could not cover is counted',
      async () => {
        const done = await waitUntil(
          'the recovery done',
          async () => {
            const [failover] = await query<{ state: string; window_orders: number | null; uncovered: number | null }>(
              pair.databaseUrl,
              'SELECT state, window_orders, uncovered FROM failovers ORDER BY id',
            );
            return failover?.state === 'done' && failover;
          },
          120_000,
          500,
        );
        expect(done.window_orders).toBeGreaterThan(0);
        h.figure('the window reconciled', `${done.window_orders ?? 0} orders, ${done.uncovered ?? 0} not covered`);
      },
      150_000,
    );

    h.check(
      'with a synchronous standby: nothing acknowledged is lost; while it is cut writes get 503 and readiness says writes fail',
      async () => {
        const sync = await StandbyPair.start({ synchronous: true });
        world.keep(sync);
        const syncService = await world.startService({
          label: 'failover-sync',
          databaseUrl: sync.databaseUrl,
          exchange,
        });
        const timed = await timedOneByOne(syncService.publicPort, 'FOSYNC', 40);
        const sendOne = async (): Promise<{ note: Note; status: number }> => {
          const note = new NoteStream('FOSYNCCUT').next();
          return {
            note,
            status: (await postNotification(syncService.publicPort, note.body, { timeoutMs: 15_000 })).status,
          };
        };
        expect(syncService.logs.some((l) => l.includes('database replication: synchronous'))).toBe(true);
        sync.cutReplication();
        const whileCut = await sendOne();
        expect(whileCut.status).toBe(503);
        const ready = await waitUntil(
          'readiness says writes fail',
          async () => {
            const answer = await getJson<{ status: string; writesFailingSince?: string }>(
              syncService.adminPort,
              '/readyz',
            );
            return answer.body.writesFailingSince !== undefined && answer;
          },
          30_000,
        );
        expect(ready.status).toBe(200);
        await sync.killPrimary();
        await sync.promoteStandby();
        const recorded = await waitUntil(
          'the promoted standby answers',
          async () => meanings(sync.databaseUrl),
          30_000,
        );
        const acked = await query<{ n: string }>(sync.databaseUrl, 'SELECT count(*) AS n FROM notifications');
        expect(Number(acked[0]?.n)).toBeGreaterThanOrEqual(timed.length);
        expect(recorded.has(whileCut.note.meaning)).toBe(false);
        h.figure('a notification with a synchronous standby, p50 / p90', p50p90(timed));
      },
      240_000,
    );

    h.secretsCheck(() => world.services);
  });
}
