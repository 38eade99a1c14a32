import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { sendError } from '../http/jsonAnswers';
import { beginRequest } from '../http/requestContext';
import type { ProcessMetrics } from '../observability/metrics';

/**
 * The admin port's listener: what a flood of admin requests may cost the process before Express sees them, so
 * that it never starves the intake sharing the event loop (issue 31). Connections past a cap are closed as they
 * are accepted; requests for anything but the probes and /metrics take a token from a bucket (a steady rate and a
 * burst) and, when none is left, wait for one in a bounded queue, which costs a timer and no work; past the queue
 * they are answered 503 `admin_busy` at once, without Express. A client that leaves while waiting leaves the queue.
 */

export interface AdmissionLimits {
  /** Requests admitted per second, on average. */
  perSecond: number;
  /** Requests admitted at once after a quiet spell. */
  burst: number;
  /** Requests waiting for a token at most; past it, 503. */
  maxWaiting: number;
}

/**
 * Open connections to the admin port at most: far above what probes, Prometheus and an operator need, and above
 * the queue's bound, so that waiting clients leave room for the probes.
 */
export const MAX_ADMIN_CONNECTIONS = 256;

/** Slow senders are cut off rather than holding one of those connections (as on the public port). */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;

/** Enough for an operator, a dashboard or a script, and under a percent or two of a core on this machine. */
export const ADMIN_ADMISSION: AdmissionLimits = { perSecond: 100, burst: 20, maxWaiting: 64 };

/** What the kubelet and Prometheus ask: never queued behind the data routes. */
const UNGATED = new Set(['/livez', '/readyz', '/metrics']);

/** The route a path would match, for the duration metric of a request refused before Express (never the raw path). */
function routeOf(url: string): string {
  if (url === '/orders/expected' || url === '/orders/reconcile') return url;
  if (/^\/orders\/reconcile\/[^/]+$/.test(url)) return '/orders/reconcile/:cause';
  if (/^\/orders\/[^/]+\/reconcile$/.test(url)) return '/orders/:orderId/reconcile';
  if (/^\/orders\/[^/]+$/.test(url)) return '/orders/:orderId';
  if (/^\/refunds\/[^/]+$/.test(url)) return '/refunds/:refundId';
  return 'unmatched';
}

/** A token bucket: pure, over a time in milliseconds. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

/** The bucket refilled to `nowMs`, and whether a token was taken from it. */
export function takeToken(bucket: Bucket, nowMs: number, limits: AdmissionLimits): { bucket: Bucket; taken: boolean } {
  const tokens = Math.min(limits.burst, bucket.tokens + ((nowMs - bucket.atMs) * limits.perSecond) / 1000);
  return tokens >= 1
    ? { bucket: { tokens: tokens - 1, atMs: nowMs }, taken: true }
    : { bucket: { tokens, atMs: nowMs }, taken: false };
}

/** Milliseconds until the bucket holds a whole token. */
export const untilToken = (bucket: Bucket, limits: AdmissionLimits): number =>
  Math.max(0, Math.ceil(((1 - bucket.tokens) * 1000) / limits.perSecond));

/** Admits requests at the bucket's pace, first come first served, with a bounded queue. */
export class Admission {
  private bucket: Bucket;
  private readonly waiting: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.bucket = { tokens: limits.burst, atMs: now() };
  }

  /** Requests waiting for a token now. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `admitted` now (`admitted`), or queues it to run once a token frees (answering how to leave the queue:
   * a waiter whose client left never runs), or refuses it when the queue is full (`refused`: it never runs).
   */
  admit(admitted: () => void): 'admitted' | 'refused' | { leave: () => void } {
    if (this.waiting.length === 0 && this.take()) {
      admitted();
      return 'admitted';
    }
    if (this.waiting.length >= this.limits.maxWaiting) return 'refused';
    this.waiting.push(admitted);
    this.schedule();
    return {
      leave: () => {
        const index = this.waiting.indexOf(admitted);
        if (index !== -1) this.waiting.splice(index, 1);
      },
    };
  }

  /** Seconds a refused client should wait: until the queue ahead of it would have drained. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.waiting.length + 1) / this.limits.perSecond));
  }

  private take(): boolean {
    const { bucket, taken } = takeToken(this.bucket, this.now(), this.limits);
    this.bucket = bucket;
    return taken;
  }

  private schedule(): void {
    if (this.timer !== null || this.waiting.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        while (this.waiting.length > 0 && this.take()) (this.waiting.shift() as () => void)();
        this.schedule();
      },
      untilToken(this.bucket, this.limits),
    );
    // A queue left behind must not hold the process open at shutdown.
    this.timer.unref();
  }
}

/** Refused before Express: the documented 503 `admin_busy`, with its request id and duration metric. */
function refuse(req: IncomingMessage, res: ServerResponse, metrics: ProcessMetrics, retryAfterSeconds: number): void {
  const route = routeOf(req.url ?? '');
  beginRequest(req, res, metrics, 'admin', () => route);
  sendError(res, 503, 'admin_busy', 'too many admin requests; retry later', {
    'Retry-After': String(retryAfterSeconds),
    Connection: 'close',
  });
}

/**
 * The admin port's server: the connection cap, and the data routes admitted through `admission` before the
 * app (Express) sees them.
 */
export function createAdminServer(
  app: RequestListener,
  metrics: ProcessMetrics,
  admission: Admission = new Admission(ADMIN_ADMISSION),
): http.Server {
  const server = http.createServer(
    { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
    (req, res) => {
      if (UNGATED.has(req.url ?? '')) return void app(req, res);
      const ticket = admission.admit(() => {
        if (!res.destroyed) void app(req, res);
      });
      if (ticket === 'refused') refuse(req, res, metrics, admission.retryAfterSeconds);
      else if (ticket !== 'admitted') res.once('close', ticket.leave);
    },
  );
  server.maxConnections = MAX_ADMIN_CONNECTIONS;
  return server;
}
