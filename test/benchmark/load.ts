/**
 * The load: a stream of realistic signed notifications (20 % repeats), and the two ways of sending
 * it: a closed loop (autocannon, as fast as the receiver answers) and an open loop (on a schedule,
 * latency counted from the scheduled time).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { orderBody, refundBody, sign } from '../support/signing';
import { CONNECTIONS, KEY } from './options';
import { quantile } from './stats';
import { sleep } from '../support/wait';

/** One signed notification: its body and its signature header, and whether it repeats one sent before. */
export interface Notification {
  body: string;
  signature: string;
  repeat: boolean;
}

/** What a workload's stream holds. */
export interface WorkloadShape {
  /** Every fifth order goes through WAITING_FOR_CONFIRMATION between PENDING and COMPLETED. */
  waitingStep: boolean;
  /** Every fourth order is refunded (FINALIZED) after COMPLETED. */
  refunds: boolean;
  /** The share of the stream that repeats an earlier notification, from 0 to 0.5 (each step repeated once, at most). */
  repeatShare: number;
  /** Order ids random as the payment service's, rather than the seed and a counter. */
  randomIds: boolean;
}

/** The benchmark's workload: the lifecycle with its WAITING step and refunds, 20 % repeats, counted ids. */
export const BENCH_WORKLOAD: WorkloadShape = { waitingStep: true, refunds: true, repeatShare: 0.2, randomIds: false };

/**
 * An endless stream of fresh notifications: order lifecycles (PENDING, COMPLETED with buyer and pay method, and
 * what `shape` adds), each step followed by repeats of earlier notifications so that `shape.repeatShare` of the
 * stream are duplicates, however much of it a run takes. Order ids are the seed and a counter; with
 * `randomIds`, random as the payment service's are, so that new orders land all over the indexes that a long
 * history has made large.
 */
export function workload(seed: string, shape: WorkloadShape = BENCH_WORKLOAD): () => Notification {
  const sent: Notification[] = [];
  const ready: Notification[] = [];
  // Each step is followed by one repeat with this chance p: p / (1 + p) of the stream is then repeats.
  const repeatChance = shape.repeatShare / (1 - shape.repeatShare);
  let n = 0;
  const push = (notification: Notification): void => {
    sent.push(notification);
    ready.push(notification);
  };
  const nextLifecycle = (): void => {
    const orderId = shape.randomIds ? randomOrderId() : `B${seed}${n.toString(36).toUpperCase()}`;
    n++;
    const steps = [orderBody({ orderId, status: 'PENDING', paymentId: String(n) })];
    if (shape.waitingStep && n % 5 === 0) {
      steps.push(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION', paymentId: String(n) }));
    }
    steps.push(
      orderBody({
        orderId,
        status: 'COMPLETED',
        paymentId: String(n),
        payMethodType: 'PBL',
        localReceiptDateTime: '2026-11-22T10:00:00.000+01:00',
        buyer: { email: 'buyer@example.com', firstName: 'Ann', lastName: 'Buyer', language: 'pl' },
      }),
    );
    if (shape.refunds && n % 4 === 0) steps.push(refundBody({ orderId, refundId: `R${orderId}`, status: 'FINALIZED' }));
    for (const body of steps) {
      push({ body, signature: sign(body, KEY), repeat: false });
      // A repeat is always of a notification already ahead of it in the stream.
      if (Math.random() < repeatChance && sent.length > 1) {
        push({ ...(sent[Math.floor(Math.random() * sent.length)] as Notification), repeat: true });
      }
    }
  };
  let next = 0;
  return () => {
    if (next === ready.length) {
      ready.length = next = 0;
      nextLifecycle();
    }
    return ready[next++] as Notification;
  };
}

const ID_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** An order id like the payment service's: 24 random upper-case letters and digits. */
const randomOrderId = (): string =>
  Array.from(randomBytes(24), (byte) => ID_CHARACTERS[byte % ID_CHARACTERS.length]).join('');

/** The first `count` notifications of a stream. */
export const take = (stream: () => Notification, count: number): Notification[] =>
  Array.from({ length: count }, stream);

/**
 * A stream with its first `count` notifications made in advance, so that signing them does not
 * take the load generator's time during a run (a run that gets further makes the rest as it goes).
 */
export const madeAhead = (stream: () => Notification, count: number): (() => Notification) => {
  const made = take(stream, count);
  let next = 0;
  return () => (next < made.length ? (made[next++] as Notification) : stream());
};

/** The same notifications over and over. */
export const cycle = (notifications: readonly Notification[]): (() => Notification) => {
  let next = 0;
  return () => notifications[next++ % notifications.length] as Notification;
};

/** Closed loop: `connections` connections, each sending its next notification as soon as the last was answered. */
export async function closedLoop(
  port: number,
  nextNotification: () => Notification,
  seconds: number,
  connections = CONNECTIONS,
): Promise<{ rps: number; requests: number; non2xx: number; seconds: number }> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/notifications`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const n = nextNotification();
          return {
            ...request,
            method: 'POST',
            path: '/notifications',
            headers: { 'content-type': 'application/json;charset=UTF-8', 'opensvc-signature': n.signature },
            body: n.body,
          };
        },
      },
    ],
  });
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    non2xx: result.non2xx,
    seconds: result.duration,
  };
}

/** One request of an open loop: when it was due (performance.now()), and what it got how long after. */
export interface OpenLoopSample {
  dueMs: number;
  latencyMs: number;
  /** The answer's status; 0: no answer (the connection failed). */
  status: number;
}

/** Open loop: requests leave on schedule whatever the answers; latency counts from the scheduled time. */
export async function openLoop(port: number, notifications: Notification[], rate: number, seconds: number) {
  const { samples, loadGeneratorLagMaxMs } = await openLoopSamples(port, notifications, rate, seconds);
  return { ...latencySummary(samples), loadGeneratorLagMaxMs };
}

/**
 * The open loop's requests one by one, for a caller that reads a window of them: it sends for `seconds`, or
 * until `stop` aborts. Past the end of `notifications` it starts over (repeats: duplicates).
 */
export async function openLoopSamples(
  port: number,
  notifications: Notification[],
  rate: number,
  seconds: number,
  stop?: AbortSignal,
): Promise<{ samples: OpenLoopSample[]; loadGeneratorLagMaxMs: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  const samples: OpenLoopSample[] = [];
  const total = rate * seconds;
  // The load generator's own stalls: a request that leaves late is counted late, whoever stalled.
  const ownLag = monitorEventLoopDelay({ resolution: 10 });
  ownLag.enable();
  const start = performance.now();
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < total && stop?.aborted !== true; i++) {
    const due = start + (i * 1000) / rate;
    // Never before its time (timers fire on whole milliseconds, and a request sent early would
    // count less than it took); a request that leaves late counts from its scheduled time.
    while (performance.now() < due) await sleep(Math.ceil(due - performance.now()));
    const n = notifications[i % notifications.length] as Notification;
    inFlight.push(
      new Promise<void>((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            path: '/notifications',
            method: 'POST',
            agent,
            headers: {
              'Content-Type': 'application/json;charset=UTF-8',
              'OpenSvc-Signature': n.signature,
              'Content-Length': Buffer.byteLength(n.body),
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              samples.push({ dueMs: due, latencyMs: performance.now() - due, status: res.statusCode ?? 0 });
              resolve();
            });
          },
        );
        req.on('error', () => {
          samples.push({ dueMs: due, latencyMs: performance.now() - due, status: 0 });
          resolve();
        });
        req.end(n.body);
      }),
    );
  }
  await Promise.all(inFlight);
  ownLag.disable();
  agent.destroy();
  return { samples, loadGeneratorLagMaxMs: ownLag.max / 1e6 };
}

/** The latency of answered requests (quantiles, ms) and how many were not answered 200. */
export function latencySummary(samples: readonly OpenLoopSample[]) {
  const sorted = samples
    .filter((s) => s.status !== 0)
    .map((s) => s.latencyMs)
    .sort((a, b) => a - b);
  return {
    sent: samples.length,
    failures: samples.filter((s) => s.status !== 200).length,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/** What an open loop measured. */
export type OpenLoopResult = Awaited<ReturnType<typeof openLoop>>;
