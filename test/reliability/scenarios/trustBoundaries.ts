import { OTHER_KEY, OTHER_POS_ID, orderBody, POS_ID, refundBody, SECOND_KEY, uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { send, signatureFor, type HttpResult } from '../support/http';
import { holdRequest, RowCounter, type HeldRequest } from '../support/rawHttp';
import { fingerprintKey } from '../../../src/verification/secondKeys';
import { harness, percentile, POD_LIMIT_MB } from '../support/scenario';
import { RssSampler, type ServiceProcess } from '../support/serviceProcess';
import { query } from '../../support/database';
import { ScenarioWorld } from '../support/world';
import { sleep, waitUntil } from '../../support/wait';

/** The admin API's bearer token in this scenario (ADMIN_TOKEN). */
const ADMIN_TOKEN = 'adm-3c9f0b7e-reliability-token';
/** The trusted proxy's address; the attacker connects from another loopback address. */
const PROXY_ADDRESS = '127.0.0.2';
const ATTACKER_ADDRESS = '127.0.0.3';
/** Held unverified bodies: within UNVERIFIED_BODIES_LIMIT (32 MB) at first, then beyond it. */
const HELD_WITHIN = 400;
const HELD_BEYOND = 250;
const HELD_DECLARED_BYTES = 60_000;

const ADMIN_FLOOD_CLIENTS = 32;
const LATENCY_SAMPLES = 300;
/** Idle and flooded alternate this many times (LATENCY_SAMPLES split between the rounds on each side). */
const LATENCY_ROUNDS = 3;

export const TRUST_BOUNDARIES: ScenarioDefinition = {
  id: 8,
  title: 'Trust boundaries',
  done:
    `Against a service with two POS (${POS_ID}, ${OTHER_POS_ID}), ALLOWED_SOURCE_IPS=127.0.0.1, ADMIN_TOKEN and the default ` +
    `BODY_LIMIT and UNVERIFIED_BODIES_LIMIT, and a second one trusting the proxy ${PROXY_ADDRESS}: one POS's key aimed at the ` +
    "other's orders and refunds (POS named, omitted, null; refund first); facts restated otherwise; a refund moved between " +
    `orders; X-Forwarded-For from the proxy and from another peer (${ATTACKER_ADDRESS}), in every odd spelling; ` +
    `${HELD_WITHIN} then ${HELD_WITHIN + HELD_BEYOND} connections each holding a ${HELD_DECLARED_BYTES / 1000} KB unverified ` +
    `body half sent, with RSS sampled every 100 ms and authentic notifications sent meanwhile; ${LATENCY_SAMPLES} ` +
    `notifications timed alone and ${LATENCY_SAMPLES} while ${ADMIN_FLOOD_CLIENTS} clients poll the admin API as fast as ` +
    `it answers them (a new connection each), alternating in ${LATENCY_ROUNDS} rounds.`,
};

const code = (r: HttpResult): string | undefined => {
  try {
    return (JSON.parse(r.body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
};
const describeResult = (r: HttpResult): string => `${r.status} ${code(r) ?? r.error ?? ''}`.trim();

export function trustBoundariesScenario(report: RunReport): void {
  const h = harness(report, TRUST_BOUNDARIES);
  describe(`${TRUST_BOUNDARIES.id}. ${TRUST_BOUNDARIES.title}`, () => {
    const world = new ScenarioWorld('trust');
    let service: ServiceProcess;
    let behindProxy: ServiceProcess;
    let rows: RowCounter;
    const answers: number[] = [];

    /** A notification signed with `key`, from `localAddress` (127.0.0.1 unless said). */
    const post = async (
      body: string,
      key: string,
      options: { port?: number; localAddress?: string; headers?: Record<string, string> } = {},
    ): Promise<HttpResult> => {
      const bytes = Buffer.from(body);
      const result = await send({
        port: options.port ?? service.publicPort,
        body: bytes,
        headers: {
          'Content-Type': 'application/json;charset=UTF-8',
          'Content-Length': bytes.length,
          'OpenSvc-Signature': signatureFor(bytes, key),
          ...options.headers,
        },
        localAddress: options.localAddress,
        timeoutMs: 20_000,
      });
      answers.push(result.status);
      return result;
    };

    const admin = (path: string, token: string | null = ADMIN_TOKEN): Promise<HttpResult> =>
      send({
        port: service.adminPort,
        method: 'GET',
        path,
        headers: token === null ? {} : { Authorization: `Bearer ${token}` },
        timeoutMs: 10_000,
      });

    /** Refused with `status` and `expectedCode`, and not one row written. */
    const refused = async (
      problems: string[],
      label: string,
      status: number,
      expectedCode: string,
      request: () => Promise<HttpResult>,
    ): Promise<void> => {
      const before = await rows.total();
      const result = await request();
      const after = await rows.total();
      if (result.status !== status || code(result) !== expectedCode)
        problems.push(`${label}: expected ${status} ${expectedCode}, got ${describeResult(result)}`);
      if (after !== before) problems.push(`${label}: refused but ${after - before} rows were written`);
    };

    const accepted = async (problems: string[], label: string, request: () => Promise<HttpResult>): Promise<void> => {
      const result = await request();
      if (result.status !== 200) problems.push(`${label}: expected 200, got ${describeResult(result)}`);
    };

    h.check(
      'starts a service with two POS and an admin token, and one behind a trusted proxy; the start log names each POS and its key fingerprint, never a key',
      async () => {
        service = await world.startService({
          label: 'trust',
          databaseUrl: world.database.url,
          exchange: world.exchange,
          env: { ADMIN_TOKEN },
        });
        behindProxy = await world.startService({
          label: 'trust-behind-proxy',
          databaseUrl: world.database.url,
          exchange: world.exchange,
          env: { TRUST_PROXY: PROXY_ADDRESS, RELAY_ENABLED: 'false' },
        });
        rows = new RowCounter(world.database.url);
        world.keep({ stop: () => rows.close() });
        expect(await rows.total()).toBe(0);
        const loaded = service.jsonLogs().find((l) => l.msg === 'second keys loaded (fingerprints, never the keys)');
        expect(loaded?.keys).toEqual([
          { posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), minAlgorithm: null },
          { posId: OTHER_POS_ID, fingerprint: fingerprintKey(OTHER_KEY), minAlgorithm: null },
        ]);
      },
    );

    h.check(
      "one POS's key cannot touch the other's orders or refunds: 401 pos_mismatch and nothing written, whatever the body says of its POS",
      async () => {
        const problems: string[] = [];
        const orderId = uniqueId('XPOS');
        const owned = { orderId, merchantPosId: OTHER_POS_ID, totalAmount: '15000' };
        await accepted(problems, 'the owner records its order', () =>
          post(orderBody({ ...owned, status: 'PENDING' }), OTHER_KEY),
        );
        const attacks: Array<[string, string]> = [
          [
            'COMPLETED naming the attacker POS, amount 1',
            orderBody({ orderId, status: 'COMPLETED', merchantPosId: POS_ID, totalAmount: '1' }),
          ],
          [
            'COMPLETED with merchantPosId left out',
            JSON.stringify({
              order: { orderId, status: 'COMPLETED', totalAmount: '15000', currencyCode: 'PLN' },
              properties: [],
            }),
          ],
          [
            'CANCELED with merchantPosId null',
            JSON.stringify({
              order: { orderId, status: 'CANCELED', merchantPosId: null, totalAmount: '15000', currencyCode: 'PLN' },
              properties: [],
            }),
          ],
          [
            "a refund FINALIZED for the owner's order",
            refundBody({ orderId, refundId: uniqueId('XREF'), status: 'FINALIZED' }),
          ],
        ];
        for (const [label, body] of attacks)
          await refused(problems, label, 401, 'pos_mismatch', () => post(body, SECOND_KEY));

        // A refund seen before its order binds that order to the refund's POS.
        const refundFirst = uniqueId('XRF');
        await accepted(problems, 'a refund before its order', () =>
          post(refundBody({ orderId: refundFirst, refundId: uniqueId('XREF'), status: 'PENDING' }), OTHER_KEY),
        );
        await refused(problems, 'the order of that refund, signed by the other POS', 401, 'pos_mismatch', () =>
          post(orderBody({ orderId: refundFirst, status: 'COMPLETED', merchantPosId: POS_ID }), SECOND_KEY),
        );

        await accepted(problems, 'the owner completes its order', () =>
          post(orderBody({ ...owned, status: 'COMPLETED' }), OTHER_KEY),
        );
        const view = await admin(`/orders/${orderId}`);
        const order = JSON.parse(view.body) as { status?: string; merchantPosId?: string; totalAmount?: string };
        if (order.status !== 'COMPLETED' || order.merchantPosId !== OTHER_POS_ID || order.totalAmount !== '15000')
          problems.push(`the owner's order after the attacks: ${view.body.slice(0, 200)}`);
        h.figure('cross-POS attacks refused', attacks.length + 1);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'a restated fact is recorded and answered 200 while the projection keeps the first value; the disagreement is counted',
      async () => {
        const problems: string[] = [];
        const orderId = uniqueId('FACT');
        await accepted(problems, 'PENDING', () => post(orderBody({ orderId, status: 'PENDING' }), SECOND_KEY));
        await accepted(problems, 'COMPLETED with another amount and currency', () =>
          post(orderBody({ orderId, status: 'COMPLETED', totalAmount: '1', currencyCode: 'EUR' }), SECOND_KEY),
        );
        const order = JSON.parse((await admin(`/orders/${orderId}`)).body) as {
          status?: string;
          totalAmount?: string;
          currencyCode?: string;
        };
        if (order.status !== 'COMPLETED' || order.totalAmount !== '15000' || order.currencyCode !== 'PLN')
          problems.push(`projection after the restatement: ${JSON.stringify(order)}`);
        const metrics = await service.metricsText();
        for (const field of ['totalAmount', 'currencyCode'])
          if (
            !new RegExp(`payment_notification_disagreements_total\\{[^}]*field="${field}"[^}]*\\} [1-9]`).test(metrics)
          )
            problems.push(`no disagreement counted for ${field}`);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'a refund moved between orders, in every order of statuses, is kept and answered 200, never 5xx',
      async () => {
        const problems: string[] = [];
        const sequences: Array<[string, string]> = [
          ['FINALIZED', 'CANCELED'],
          ['CANCELED', 'FINALIZED'],
          ['PENDING', 'FINALIZED'],
          ['FINALIZED', 'FINALIZED'],
        ];
        for (const [first, second] of sequences) {
          const [orderA, orderB, refundId] = [uniqueId('MOVA'), uniqueId('MOVB'), uniqueId('MOVR')];
          for (const orderId of [orderA, orderB])
            await accepted(problems, `order ${orderId}`, () =>
              post(orderBody({ orderId, status: 'COMPLETED' }), SECOND_KEY),
            );
          await accepted(problems, `refund ${first} under A`, () =>
            post(refundBody({ orderId: orderA, refundId, status: first }), SECOND_KEY),
          );
          for (let attempt = 1; attempt <= 3; attempt += 1)
            await accepted(problems, `refund ${second} under B (attempt ${attempt})`, () =>
              post(refundBody({ orderId: orderB, refundId, status: second }), SECOND_KEY),
            );
        }
        h.figure('refunds moved between orders', sequences.length);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'X-Forwarded-For is believed from the trusted proxy only, and every spelling of an address is one address or a 4xx',
      async () => {
        const problems: string[] = [];
        const audited = async (orderId: string): Promise<string | null> => {
          const [row] = await query<{ address: string | null }>(
            world.database.url,
            `SELECT host(d.source_address) AS address FROM deliveries d
               JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1`,
            [orderId],
          );
          return row?.address ?? null;
        };
        const viaProxy = (
          forwardedFor: string,
          from = PROXY_ADDRESS,
        ): { orderId: string; send: () => Promise<HttpResult> } => {
          const orderId = uniqueId('XFF');
          return {
            orderId,
            send: () =>
              post(orderBody({ orderId, status: 'PENDING' }), SECOND_KEY, {
                port: behindProxy.publicPort,
                localAddress: from,
                headers: { 'X-Forwarded-For': forwardedFor },
              }),
          };
        };
        // Around the proxy: another peer names an allowed address.
        for (const forwardedFor of ['127.0.0.1', '127.0.0.1, 127.0.0.1', `127.0.0.1, ${PROXY_ADDRESS}`]) {
          const attempt = viaProxy(forwardedFor, ATTACKER_ADDRESS);
          await refused(
            problems,
            `from ${ATTACKER_ADDRESS} with X-Forwarded-For ${forwardedFor}`,
            403,
            'source_not_allowed',
            attempt.send,
          );
        }
        // Through the proxy: the client's own entries left of the sender are ignored.
        /** Each X-Forwarded-For and what comes of it: the address audited, or 'invalid' (400) or 'not allowed' (403). */
        const spellings: Array<[string, string]> = [
          ['127.0.0.1', '127.0.0.1'],
          [' 127.0.0.1 ', '127.0.0.1'],
          ['127.0.0.1:8080', '127.0.0.1'],
          ['::ffff:127.0.0.1', '127.0.0.1'],
          ['[::ffff:7f00:1]:443', '127.0.0.1'],
          ['185.68.12.10, 127.0.0.1', '127.0.0.1'],
          ['127.0.0.1, 185.68.12.10', 'not allowed'],
          ['::1', 'not allowed'],
          ['fe80::1%eth0', 'not allowed'],
          ['127.1', 'invalid'],
          ['2130706433', 'invalid'],
          ['0x7f.0.0.1', 'invalid'],
          ['0177.0.0.1', 'invalid'],
          ['127.000.000.001', 'invalid'],
          ['[127.0.0.1]', 'invalid'],
          ['localhost', 'invalid'],
          ['127.0.0.1 127.0.0.2', 'invalid'],
          ['unknown, 127.0.0.1', '127.0.0.1'],
          ['127.0.0.1, unknown', 'invalid'],
        ];
        for (const [forwardedFor, expected] of spellings) {
          const attempt = viaProxy(forwardedFor);
          const label = `through the proxy, X-Forwarded-For ${JSON.stringify(forwardedFor)}`;
          if (expected === 'invalid') await refused(problems, label, 400, 'invalid_source_address', attempt.send);
          else if (expected === 'not allowed') await refused(problems, label, 403, 'source_not_allowed', attempt.send);
          else {
            await accepted(problems, label, attempt.send);
            const stored = await audited(attempt.orderId);
            if (stored !== expected) problems.push(`${label}: audit row says ${stored}, expected ${expected}`);
          }
        }
        h.figure('X-Forwarded-For spellings', spellings.length + 3);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      `hundreds of held unverified bodies: RSS stays well under the pod's ${POD_LIMIT_MB} MB, authentic notifications are accepted within the budget and answered 503 with Retry-After beyond it`,
      async () => {
        const problems: string[] = [];
        const head = (): string =>
          'POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json;charset=UTF-8\r\n' +
          `Content-Length: ${HELD_DECLARED_BYTES}\r\n` +
          `OpenSvc-Signature: sender=checkout;signature=${'0'.repeat(32)};algorithm=MD5;content=DOCUMENT\r\n\r\n`;
        const half = Buffer.alloc(HELD_DECLARED_BYTES / 2, 0x20);
        const rss = new RssSampler(service).start();
        const baselineMb = Math.round((service.rssKb() ?? 0) / 1024);
        const held: HeldRequest[] = [];
        try {
          for (let i = 0; i < HELD_WITHIN; i += 1) held.push(holdRequest(service.publicPort, head(), half));
          // Every held request has reached the server and reserved its declared length.
          await waitUntil(
            `${HELD_WITHIN} held bodies reserved in the unverified budget`,
            async () => (await service.gauge('intake_unverified_body_bytes')) >= HELD_WITHIN * HELD_DECLARED_BYTES,
            30_000,
            100,
          );
          const within = await Promise.all(
            Array.from({ length: 20 }, () =>
              post(orderBody({ orderId: uniqueId('HELD'), status: 'PENDING' }), SECOND_KEY),
            ),
          );
          const acceptedWithin = within.filter((r) => r.status === 200).length;
          if (acceptedWithin !== within.length)
            problems.push(`within the budget: ${within.map(describeResult).join(', ')}`);

          const beyond = Array.from({ length: HELD_BEYOND }, () => holdRequest(service.publicPort, head(), half));
          held.push(...beyond);
          const busy = await Promise.all(
            beyond.map((request) =>
              Promise.race([request.answer, new Promise((r) => setTimeout(() => r('held'), 3_000))]),
            ),
          );
          const refusedBusy = busy.filter((status) => status === 503).length;
          const probe = await post(orderBody({ orderId: uniqueId('HELD'), status: 'PENDING' }), SECOND_KEY);
          if (refusedBusy === 0) problems.push('beyond the budget: no held body was answered 503');
          if (probe.status === 503 && !probe.headers['retry-after'])
            problems.push('an authentic notification answered 503 without Retry-After');
          if (probe.status !== 200 && probe.status !== 503)
            problems.push(`an authentic notification beyond the budget: ${describeResult(probe)}`);

          const peakMb = rss.stop();
          h.figure('held unverified bodies', `${HELD_WITHIN} within the budget, then ${HELD_BEYOND} more`);
          h.figure('held bodies answered 503 busy beyond the budget', refusedBusy);
          h.figure('authentic notifications while the budget held', `${acceptedWithin}/${within.length} accepted`);
          h.figure('authentic notification with the budget full', describeResult(probe));
          h.figure(
            'RSS with held bodies',
            `${baselineMb} MB before, ${peakMb} MB at peak (pod limit ${POD_LIMIT_MB} MB)`,
          );
          if (peakMb > POD_LIMIT_MB * 0.75) problems.push(`peak RSS ${peakMb} MB is not well under ${POD_LIMIT_MB} MB`);
        } finally {
          rss.stop();
          for (const request of held) request.close();
        }
        // Once the held connections are gone, their reservations are given back.
        let after: HttpResult | null = null;
        for (let attempt = 0; attempt < 50 && after?.status !== 200; attempt += 1) {
          if (attempt > 0) await sleep(200);
          after = await post(orderBody({ orderId: uniqueId('HELD'), status: 'PENDING' }), SECOND_KEY);
        }
        if (after?.status !== 200)
          problems.push(`after the held bodies closed: ${after ? describeResult(after) : 'none'}`);
        expect(problems).toEqual([]);
      },
      120_000,
    );

    h.check(
      `the admin API cannot starve intake: ${LATENCY_SAMPLES} notifications timed alone and under ${ADMIN_FLOOD_CLIENTS} polling admin clients; past its cap it answers 503 admin_busy`,
      async () => {
        const problems: string[] = [];
        const orderId = uniqueId('ADM');
        await accepted(problems, 'the polled order', () => post(orderBody({ orderId, status: 'PENDING' }), SECOND_KEY));
        for (const [label, token] of [
          ['no token', null],
          ['a wrong token', 'wrong'],
        ] as const) {
          const result = await admin(`/orders/${orderId}`, token);
          if (result.status !== 401 || code(result) !== 'unauthorized')
            problems.push(`admin with ${label}: expected 401 unauthorized, got ${describeResult(result)}`);
        }
        const livez = await admin('/livez', null);
        if (livez.status !== 200) problems.push(`/livez without a token: ${describeResult(livez)}`);

        const timeNotifications = async (samples: number): Promise<number[]> => {
          const latencies: number[] = [];
          for (let i = 0; i < samples; i += 4) {
            const batch = await Promise.all(
              Array.from({ length: 4 }, () =>
                post(orderBody({ orderId: uniqueId('LAT'), status: 'PENDING' }), SECOND_KEY),
              ),
            );
            for (const r of batch) {
              if (r.status !== 200) problems.push(`a notification during the admin check: ${describeResult(r)}`);
              latencies.push(r.ms);
            }
          }
          return latencies;
        };

        // Idle and flooded alternate, round after round, so that the machine's other load (it is shared) falls on
        // both alike.
        const alone: number[] = [];
        const flooded: number[] = [];
        const adminAnswers = new Map<string, number>();
        let adminServedMs = 0;
        for (let round = 0; round < LATENCY_ROUNDS; round += 1) {
          alone.push(...(await timeNotifications(LATENCY_SAMPLES / LATENCY_ROUNDS)));
          let flooding = true;
          const started = Date.now();
          const pollers = Array.from({ length: ADMIN_FLOOD_CLIENTS }, async () => {
            while (flooding) {
              const result = await admin(`/orders/${orderId}`);
              const key = describeResult(result);
              adminAnswers.set(key, (adminAnswers.get(key) ?? 0) + 1);
            }
          });
          flooded.push(...(await timeNotifications(LATENCY_SAMPLES / LATENCY_ROUNDS)));
          flooding = false;
          await Promise.all(pollers);
          adminServedMs += Date.now() - started;
        }

        for (const key of adminAnswers.keys())
          if (key !== '200' && key !== '503 admin_busy') problems.push(`admin answer under the flood: ${key}`);
        const figures = (latencies: number[]): string =>
          `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`;
        h.figure('notification latency without admin traffic', figures(alone));
        h.figure(`notification latency with ${ADMIN_FLOOD_CLIENTS} admin clients`, figures(flooded));
        h.figure(
          'notification p50 under the admin flood / idle (target at most 3)',
          (percentile(flooded, 50) / Math.max(1, percentile(alone, 50))).toFixed(2),
        );
        h.figure(
          'admin answers during the flood',
          `${[...adminAnswers].map(([key, count]) => `${count} × ${key}`).join(', ')} (${Math.round(
            ((adminAnswers.get('200') ?? 0) * 1000) / Math.max(1, adminServedMs),
          )} served a second)`,
        );
        expect(problems).toEqual([]);
      },
      180_000,
    );

    h.check('no request was answered 5xx but the budget and admin caps; the service stops cleanly', async () => {
      const unexpected = answers.filter((status) => status >= 500 && status !== 503);
      h.figure('notifications sent', answers.length);
      expect(unexpected).toEqual([]);
      expect(await behindProxy.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => world.services);
  });
}
