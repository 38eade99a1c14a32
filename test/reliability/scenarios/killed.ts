import { EventConsumer } from '../../support/broker';
import type { RunReport, ScenarioDefinition } from '../report';
import { harness, seconds } from '../support/scenario';
import { NoteStream, Sender } from '../support/sender';
import type { ServiceProcess } from '../support/serviceProcess';
import { consistencyViolations, counts } from '../support/store';
import { checkCommitted } from '../support/traffic';
import { ScenarioWorld } from '../support/world';

const KILLS = 2;
/** Notifications accepted between two kills: each comes under load. */
const UNDER_LOAD = 100;

export const KILLED: ScenarioDefinition = {
  id: 3,
  title: 'Process killed with SIGKILL under load, restarted on the same database',
  done:
    `A sender at full speed (16 connections, no pause, 10% duplicates) while the process is SIGKILLed ${KILLS} times ` +
    '(1.5 s into the traffic each time) and started again on the same database; unanswered and refused deliveries are ' +
    'sent again until accepted, like the payment service does; a consumer collects every event.',
};

export function killedScenario(report: RunReport): void {
  const h = harness(report, KILLED);
  describe(`${KILLED.id}. ${KILLED.title}`, () => {
    const world = new ScenarioWorld('kill');
    const { database, exchange, ledger, services } = world;
    let service: ServiceProcess;
    let consumer: EventConsumer;
    let sender: Sender;
    const restarts: number[] = [];
    const inFlightAtKill: number[] = [];

    const start = async (): Promise<void> => {
      service = await world.startService({
        label: `killed-${services.length + 1}`,
        databaseUrl: database.url,
        exchange,
      });
    };

    world.beforeStopping(() => sender?.halt());

    h.check('starts', async () => {
      consumer = world.keep(await new EventConsumer(exchange).start());
      await start();
    });

    h.check(
      `SIGKILLed ${KILLS} times under load and restarted, the sender's retries are all accepted in the end`,
      async () => {
        sender = new Sender({
          port: () => service.publicPort,
          ledger,
          stream: new NoteStream('KIL'),
          workers: 16,
          pauseMs: 0,
          retryDelayMs: 200,
          duplicateRate: 0.1,
        }).start();
        for (let i = 0; i < KILLS; i += 1) {
          await ledger.flowing(UNDER_LOAD);
          const before = ledger.requests;
          const killed = service;
          killed.kill('SIGKILL');
          const exit = await killed.waitExit(5_000);
          expect(exit).toMatchObject({ signal: 'SIGKILL' });
          const down = Date.now();
          await start();
          restarts.push(Date.now() - down);
          inFlightAtKill.push(
            ledger.attempts.slice(before).filter((a) => a.result.status === 0 && a.result.startedAt < down).length,
          );
        }
        await ledger.flowing(UNDER_LOAD);
        await sender.finish(30_000);
        h.figure('restart to ready', restarts.map(seconds).join(', '));
        h.figure('requests cut by the kill', inFlightAtKill.join(', '));
        expect(sender.notAccepted()).toEqual([]);
        const wrong = ledger.attempts.filter(
          (a) => a.result.status !== 200 && a.result.status !== 503 && a.result.status !== 0,
        );
        expect(wrong.map((a) => `${a.result.status} ${a.result.body.slice(0, 100)}`)).toEqual([]);
      },
      90_000,
    );

    h.check('every notification answered 200 is in the database; nothing is half-written', async () => {
      const committed = await checkCommitted(database.url, ledger);
      const stored = await counts(database.url);
      h.trafficFigures(ledger, stored);
      h.figure('unanswered deliveries that had been committed', committed.storedWithoutOk);
      h.figure('max latency', seconds(ledger.maxLatencyMs((a) => a.result.status !== 0)));
      expect(committed.okButMissing).toEqual([]);
      expect(committed.unexplained).toEqual([]);
      expect(await consistencyViolations(database.url)).toEqual([]);
    });

    h.eventsCheck(
      'every committed event is eventually published (the consumer sees every outbox event id)',
      database.url,
      () => consumer.messages,
      45_000,
    );

    h.check('the last process stops cleanly (SIGTERM, exit code 0)', async () => {
      expect(await service.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => services);
  });
}
