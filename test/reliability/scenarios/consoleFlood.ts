import http from 'node:http';
import { query } from '../../support/database';
import { orderBody, SECOND_KEY, uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { send, signatureFor, type HttpResult } from '../support/http';
import { harness, percentile } from '../support/scenario';
import type { ServiceProcess } from '../support/serviceProcess';
import { ScenarioWorld } from '../support/world';

const OPERATOR_TOKEN = 'console-operator-reliability-token';
/** As many as the admin flood of scenario 8, and its bound on the notification p50 (docs/RELIABILITY.md). */
const CONSOLE_CLIENTS = 32;
const P50_BOUND = 3;
const LATENCY_SAMPLES = 300;
/** Idle and flooded alternate this many times (LATENCY_SAMPLES split between the rounds on each side). */
const LATENCY_ROUNDS = 3;
/** What the needs-attention page lists while it is reloaded: quarantined notifications and conflicts. */
const QUARANTINED = 60;
const CONFLICTS = 20;

export const CONSOLE_FLOOD: ScenarioDefinition = {
  id: 12,
  title: 'Console: people reloading the needs-attention page',
  done:
    `Against a service with console tokens, ${QUARANTINED} quarantined notifications and ${CONFLICTS} conflicting ones: ` +
    `an operator signs in through the form; ${LATENCY_SAMPLES} notifications timed alone and ${LATENCY_SAMPLES} while ` +
    `${CONSOLE_CLIENTS} browser-like clients (a kept-alive connection each, the session cookie, the page then its ` +
    `stylesheet) reload /console/attention as fast as it answers them, alternating in ${LATENCY_ROUNDS} rounds; the ` +
    'audit rows and the history counted before and after.',
};

const statusOf = (r: HttpResult): string => (r.status === 0 ? `no answer (${r.error ?? '?'})` : String(r.status));

export function consoleFloodScenario(report: RunReport): void {
  const h = harness(report, CONSOLE_FLOOD);
  describe(`${CONSOLE_FLOOD.id}. ${CONSOLE_FLOOD.title}`, () => {
    const world = new ScenarioWorld('console');
    let service: ServiceProcess;
    let cookie = '';

    const post = async (body: string): Promise<HttpResult> => {
      const bytes = Buffer.from(body);
      return send({
        port: service.publicPort,
        body: bytes,
        headers: {
          'Content-Type': 'application/json;charset=UTF-8',
          'Content-Length': bytes.length,
          'OpenSvc-Signature': signatureFor(bytes, SECOND_KEY),
        },
        timeoutMs: 20_000,
      });
    };

    /** A page of the console as a browser asks for it: its own site, the session cookie. */
    const page = (path: string, agent: http.Agent | false = false): Promise<HttpResult> =>
      send({
        port: service.adminPort,
        method: 'GET',
        path,
        agent,
        headers: { 'Sec-Fetch-Site': 'same-origin', 'Sec-Fetch-Mode': 'navigate', Cookie: cookie },
        timeoutMs: 20_000,
      });

    const historyRows = async (): Promise<Record<string, number>> => {
      const [row] = await query<Record<string, string>>(
        world.database.url,
        `SELECT (SELECT count(*) FROM console_audit) AS audit, (SELECT count(*) FROM deliveries) AS deliveries,
                (SELECT count(*) FROM notifications) AS notifications, (SELECT count(*) FROM orders) AS orders,
                (SELECT count(*) FROM quarantined_notifications) AS quarantined`,
      );
      return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)]));
    };

    h.check(
      `starts a service with console tokens, fills what needs attention (${QUARANTINED} quarantined, ${CONFLICTS} conflicts) and signs an operator in through the form`,
      async () => {
        service = await world.startService({
          label: 'console',
          databaseUrl: world.database.url,
          exchange: world.exchange,
          env: {
            CONSOLE_OPERATOR_TOKENS: `olga:${OPERATOR_TOKEN}`,
          },
        });
        const answers: string[] = [];
        for (let i = 0; i < QUARANTINED; i += 1)
          answers.push(statusOf(await post(`{"order": {"orderId": "Q${i}", "status": `)));
        for (let i = 0; i < CONFLICTS; i += 1) {
          const orderId = uniqueId('CONF');
          answers.push(statusOf(await post(orderBody({ orderId, status: 'COMPLETED', totalAmount: '1000' }))));
          answers.push(statusOf(await post(orderBody({ orderId, status: 'CANCELED', totalAmount: '1000' }))));
        }
        expect(answers.filter((a) => a !== '200')).toEqual([]);

        const form = Buffer.from(new URLSearchParams({ token: OPERATOR_TOKEN }).toString());
        const signedIn = await send({
          port: service.adminPort,
          path: '/console/sign-in',
          body: form,
          headers: {
            'Content-Type': 'application/x-www-form-urlencoded',
            'Content-Length': form.length,
            'Sec-Fetch-Site': 'same-origin',
          },
        });
        expect(signedIn.status).toBe(303);
        cookie = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? [])[0]?.split(';')[0] ?? '';
        expect(cookie).toMatch(/=/);
        const attention = await page('/console/attention');
        expect(attention.status).toBe(200);
        expect(attention.body).toMatch(/Notifications set aside, not retried yet/);
      },
      120_000,
    );

    h.check(
      `${CONSOLE_CLIENTS} clients reloading the needs-attention page move the notification p50 by at most ${P50_BOUND}x; they are answered 200 or 503 (the admin port's cap), and reading writes nothing`,
      async () => {
        const problems: string[] = [];
        const before = await historyRows();
        let sent = 0;
        const timeNotifications = async (samples: number): Promise<number[]> => {
          const latencies: number[] = [];
          for (let i = 0; i < samples; i += 4) {
            const batch = await Promise.all(
              Array.from({ length: 4 }, () => post(orderBody({ orderId: uniqueId('CLAT'), status: 'PENDING' }))),
            );
            sent += batch.length;
            for (const r of batch) {
              if (r.status !== 200) problems.push(`a notification during the console flood: ${statusOf(r)}`);
              latencies.push(r.ms);
            }
          }
          return latencies;
        };

        // Idle and flooded alternate, round after round, so that the machine's other load falls on both alike.
        const alone: number[] = [];
        const flooded: number[] = [];
        const pageAnswers = new Map<string, number>();
        const pageTimes: number[] = [];
        let floodMs = 0;
        for (let round = 0; round < LATENCY_ROUNDS; round += 1) {
          alone.push(...(await timeNotifications(LATENCY_SAMPLES / LATENCY_ROUNDS)));
          let flooding = true;
          const started = Date.now();
          const clients = Array.from({ length: CONSOLE_CLIENTS }, async () => {
            // A browser keeps its connection; each reload asks for the page, then its stylesheet.
            const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
            try {
              while (flooding) {
                const answer = await page('/console/attention', agent);
                pageAnswers.set(statusOf(answer), (pageAnswers.get(statusOf(answer)) ?? 0) + 1);
                if (answer.status === 200) {
                  pageTimes.push(answer.ms);
                  await page('/console/assets/console.css', agent);
                }
              }
            } finally {
              agent.destroy();
            }
          });
          flooded.push(...(await timeNotifications(LATENCY_SAMPLES / LATENCY_ROUNDS)));
          flooding = false;
          await Promise.all(clients);
          floodMs += Date.now() - started;
        }

        for (const key of pageAnswers.keys())
          if (key !== '200' && key !== '503') problems.push(`console answer under the flood: ${key}`);
        const figures = (latencies: number[]): string =>
          `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`;
        const ratio = percentile(flooded, 50) / Math.max(1, percentile(alone, 50));
        h.figure('notification latency without console traffic', figures(alone));
        h.figure(`notification latency with ${CONSOLE_CLIENTS} console clients`, figures(flooded));
        h.figure(`notification p50 under the console flood / idle (target at most ${P50_BOUND})`, ratio.toFixed(2));
        h.figure(
          'needs-attention answers during the flood',
          `${[...pageAnswers].map(([key, count]) => `${count} × ${key}`).join(', ')} (${Math.round(
            ((pageAnswers.get('200') ?? 0) * 1000) / Math.max(1, floodMs),
          )} pages a second; p50 ${percentile(pageTimes, 50)} ms, p99 ${percentile(pageTimes, 99)} ms)`,
        );

        // Reading writes nothing: the history grew by the new orders sent (one order, notification and delivery
        // each), the audit trail and the quarantine not at all.
        const after = await historyRows();
        const grown = (name: string): number => (after[name] ?? 0) - (before[name] ?? 0);
        expect(Object.fromEntries(Object.keys(after).map((name) => [name, grown(name)]))).toEqual({
          audit: 0,
          deliveries: sent,
          notifications: sent,
          orders: sent,
          quarantined: 0,
        });
        expect(problems).toEqual([]);
        expect(ratio).toBeLessThanOrEqual(P50_BOUND);
      },
      240_000,
    );

    h.check('the service stops cleanly', async () => {
      expect(await service.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => world.services);
  });
}
