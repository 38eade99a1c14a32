import http from 'node:http';
import net from 'node:net';
import { ADMIN_ADMISSION, Admission, MAX_ADMIN_CONNECTIONS } from '../../../src/admin/adminListener';
import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator';
import { expectAnswerMatchesContract } from '../../support/contracts';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, POS_ID, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

/**
 * What the admin port takes before it costs the process: ids that cannot be one are refused before a query or
 * an API call, and a flood of requests is admitted at a steady pace, the excess refused before Express.
 */

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-limits-5d0c1e' };

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request with the path exactly as written (fetch and supertest would resolve `..` first), on a connection of
 * its own, or on `socket` when given (already connected: the request leaves at once).
 */
function raw(port: number, method: string, path: string, socket?: net.Socket): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const connection = socket ? { createConnection: () => socket } : { agent: false as const };
    const req = http.request({ host: '127.0.0.1', port, method, path, ...connection }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** `count` connections to the port, each once connected. */
function connections(port: number, count: number): Promise<net.Socket[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
          socket.on('error', reject);
        }),
    ),
  );
}

/** Resolves once the server answers a probe sent on an open connection, which stays open (kept alive). */
function answeredOn(socket: net.Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('data', () => resolve());
    socket.once('error', reject);
    socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

const errorOf = (answer: RawAnswer): { code?: string; message?: string } | undefined =>
  (JSON.parse(answer.body) as { error?: { code?: string; message?: string } }).error;
const codeOf = (answer: RawAnswer): string | undefined => errorOf(answer)?.code;

/** What became of a request of the flood: served, refused by one of the two doors (their messages differ), or else. */
function floodOutcome(answer: RawAnswer): string {
  if (answer.status === 200) return 'served';
  const error = errorOf(answer);
  if (answer.status !== 503 || error?.code !== 'admin_busy') return `${answer.status} ${error?.code}`;
  return error.message?.includes('at once') ? 'refused by the work limit' : 'refused by the listener';
}

let double: PaymentServiceDouble;
let svc: TestService;

beforeAll(async () => {
  double = new PaymentServiceDouble({ clients: [POS] });
  await double.start();
  svc = await startTestService({
    env: {
      PAYMENT_API_URL: double.url,
      PAYMENT_API_CREDENTIALS: `${POS.posId}:${POS.clientId}:${POS.clientSecret}`,
      RECONCILE_INTERVAL: '1h',
      ADMIN_CONCURRENCY: '64',
    },
  });
});
afterAll(async () => {
  await svc.stop();
  await double.stop();
});

const BAD_IDS = ['.', '..', '%2E', '%2e%2E', 'a%2Fb', '%2F', '%00', 'x%0Ay', '%7F', 'x'.repeat(129)];

describe('ids on the admin port', () => {
  it.each(BAD_IDS)(
    'When the order or refund id is %s, then 400 invalid_order_id (invalid_refund_id) and nothing is read or asked',
    async (id) => {
      const answers: Array<[string, string, RawAnswer]> = [];
      for (const [method, path] of [
        ['GET', `/orders/${id}`],
        ['POST', `/orders/${id}/reconcile`],
        ['GET', `/refunds/${id}`],
      ] as const)
        answers.push([method, path, await raw(svc.service.adminPort, method, path)]);

      for (const [method, path, answer] of answers) {
        expectAnswerMatchesContract(method, path, answer.status, answer.headers, answer.body, 'admin');
        expect([answer.status, codeOf(answer)]).toEqual([
          400,
          path.startsWith('/refunds') ? 'invalid_refund_id' : 'invalid_order_id',
        ]);
      }
      expect(double.requests).toEqual([]);
    },
  );

  it('When an id is the longest allowed, then it is looked up', async () => {
    const answer = await raw(svc.service.adminPort, 'GET', `/orders/${'x'.repeat(128)}`);
    expect([answer.status, codeOf(answer)]).toEqual([404, 'order_not_found']);
  });
});

describe('a flood of admin requests', () => {
  it('When 200 admin requests arrive at once, then the port serves them at its pace, refuses the excess 503 admin_busy before any work, and the probes answer meanwhile', async () => {
    // The admission's clock stands still while the flood comes in, however slowly this machine takes it in: the
    // burst (20) is admitted, the queue (64) waits, the rest is refused. Then it runs, and the queue drains at its pace.
    let frozenAt: number | null = performance.now();
    const admission = new Admission(ADMIN_ADMISSION, () => frozenAt ?? performance.now());
    const fresh = await startTestService({
      env: { RELAY_ENABLED: 'false', ADMIN_CONCURRENCY: '64' },
      adminAdmission: admission,
    });
    const orderId = uniqueId('FLOOD');
    let answers: RawAnswer[];
    let livez: RawAnswer;
    let sockets: net.Socket[] = [];
    try {
      await fresh.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      sockets = await connections(fresh.service.adminPort, 200);
      let answered = 0;
      const flood = Promise.all(
        sockets.map((socket) =>
          raw(fresh.service.adminPort, 'GET', `/orders/${orderId}`, socket).then((answer) => {
            answered += 1;
            return answer;
          }),
        ),
      );
      livez = await raw(fresh.service.adminPort, 'GET', '/livez');
      const { maxWaiting } = ADMIN_ADMISSION;
      await waitUntil(
        'the flood taken in: the burst served, the queue full, the rest refused',
        async () => admission.queued === maxWaiting && answered === 200 - maxWaiting,
      );
      frozenAt = null;
      answers = await flood;
    } finally {
      for (const socket of sockets) socket.destroy();
      await fresh.stop();
    }

    expect(livez.status).toBe(200);
    // Two doors answer 503 admin_busy: the listener, before any work, to what arrives past the burst and the queue;
    // and the data routes' work limit (ADMIN_CONCURRENCY, 64 at most), to what the listener admitted while 64 were
    // being served, which a slow machine reaches.
    const outcomes = answers.map(floodOutcome);
    const count = (outcome: string): number => outcomes.filter((o) => o === outcome).length;
    expect(count('refused by the listener')).toBe(200 - ADMIN_ADMISSION.burst - ADMIN_ADMISSION.maxWaiting);
    expect(count('served') + count('refused by the work limit')).toBe(
      ADMIN_ADMISSION.burst + ADMIN_ADMISSION.maxWaiting,
    );
    expect(count('served')).toBeGreaterThan(0);
    for (const answer of answers.filter((a) => a.status === 503)) {
      expectAnswerMatchesContract('GET', `/orders/${orderId}`, answer.status, answer.headers, answer.body, 'admin');
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('When as many connections are open as the port takes, then the next one is closed as it is accepted, and served once one closes', async () => {
    const port = svc.service.adminPort;
    const open = await connections(port, MAX_ADMIN_CONNECTIONS);
    try {
      // The server counts a connection once it has accepted it: an answer on each shows it has (and keeps it).
      await Promise.all(open.map((socket) => answeredOn(socket)));
      await expect(raw(port, 'GET', '/livez')).rejects.toMatchObject({ code: 'ECONNRESET' });
    } finally {
      for (const socket of open) socket.destroy();
    }
    // Served once the server has seen a connection close; refused until then.
    const served = await waitUntil('a connection served after the others closed', () =>
      raw(port, 'GET', '/livez').then(
        (answer) => answer,
        () => false as const,
      ),
    );
    expect(served.status).toBe(200);
  });
});
