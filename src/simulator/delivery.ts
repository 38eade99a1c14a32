import http from 'node:http';
import https from 'node:https';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * When the payment service attempts a notification, counted from the status change (spec, "Events"
 * delivery rule 5): 20 attempts over 72 hours, until one is answered 200.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  0,
  1 * MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  1 * HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  9 * HOUR,
  12 * HOUR,
  15 * HOUR,
  18 * HOUR,
  21 * HOUR,
  24 * HOUR,
  36 * HOUR,
  48 * HOUR,
  60 * HOUR,
  72 * HOUR,
]);

/**
 * Simulated time. `now()` is the simulated milliseconds since the run started; `sleepUntil` waits
 * until the simulated clock reaches a moment.
 */
export interface Clock {
  now(): number;
  sleepUntil(simulatedMs: number): Promise<void>;
}

/**
 * Real time sped up by `timeScale`: with 3600, one simulated hour passes in a real second, and the
 * 72 hours of the retry schedule in 72 seconds.
 */
export function scaledClock(timeScale: number): Clock {
  if (!(timeScale > 0) || !Number.isFinite(timeScale)) throw new Error('timeScale must be a positive number');
  const startedAt = performance.now();
  const now = (): number => (performance.now() - startedAt) * timeScale;
  return {
    now,
    async sleepUntil(simulatedMs) {
      // Timers may fire a little early; wait again until the clock has really reached the moment.
      for (;;) {
        const realMs = (simulatedMs - now()) / timeScale;
        if (realMs <= 0) return;
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(realMs))));
      }
    },
  };
}

export type SendResult = { status: number; body: string } | { status: null; error: string };

/** Posts one body; never throws (a network error or timeout is a result too). */
export type Sender = (
  url: string,
  body: Buffer,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
) => Promise<SendResult>;

const MAX_ANSWER_BYTES = 64 * 1024;

/** Node's http(s), one connection per request (`Connection: close`, like the real sender). */
export const httpSender: Sender = (url, body, headers, timeoutMs) =>
  new Promise<SendResult>((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ status: null, error: 'invalid URL' });
      return;
    }
    let settled = false;
    const settle = (result: SendResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(
      target,
      {
        method: 'POST',
        agent: false,
        headers: { ...headers, 'Content-Length': String(body.length), Connection: 'close' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_ANSWER_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => settle({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (error) => settle({ status: null, error: error.message }));
      },
    );
    // The whole exchange, not just socket idleness, must end within the timeout.
    const timer = setTimeout(() => {
      req.destroy();
      settle({ status: null, error: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => settle({ status: null, error: error.code ?? error.message }));
    req.end(body);
  });

/** One attempt and how the receiver answered it. */
export interface AttemptReport {
  /** 1-based attempt number (the spec's numbering). */
  attempt: number;
  /** Simulated ms since the run started at which the schedule put this attempt. */
  scheduledAtMs: number;
  /** Simulated ms since the run started at which it was actually sent (later under load). */
  sentAtMs: number;
  /** HTTP status, or null when there was no answer. */
  status: number | null;
  /** The receiver's `outcome` (200) or error code, or the network error. */
  answer: string | null;
  /** Real milliseconds the request took. */
  durationMs: number;
}

export interface DeliveryResult {
  attempts: AttemptReport[];
  /** Answered 200 on some attempt. */
  delivered: boolean;
}

export interface DeliveryRequest {
  url: string;
  body: Buffer;
  headers: Readonly<Record<string, string>>;
  /** Simulated ms since the run started at which the status changed (the schedule counts from it). */
  changedAtMs: number;
}

export interface DeliveryOptions {
  clock: Clock;
  send?: Sender;
  schedule?: readonly number[];
  /** Stop after this many attempts (at most the schedule's length). */
  maxAttempts?: number;
  /** Real milliseconds an attempt may take. */
  timeoutMs?: number;
  /** Holds a slot while a request is in flight (bounds concurrency); released when it ends. */
  acquire?: () => Promise<() => void>;
  /** Called after each attempt, with when the next one is due (simulated ms), or null: no more. */
  onAttempt?: (attempt: AttemptReport, nextAtMs: number | null) => void;
}

/** What the receiver said: its `outcome`, else its error code, else nothing. */
export function answerOf(result: SendResult): string | null {
  if (result.status === null) return result.error;
  try {
    const parsed = JSON.parse(result.body) as { outcome?: unknown; error?: { code?: unknown } };
    if (typeof parsed.outcome === 'string') return parsed.outcome;
    if (typeof parsed.error?.code === 'string') return parsed.error.code;
  } catch {
    // Not JSON: the status says enough.
  }
  return null;
}

/**
 * Delivers one notification as the payment service does: attempt n at schedule[n-1] after the
 * status change, until an attempt is answered 200 or the schedule (or maxAttempts) runs out.
 */
export async function deliverWithRetries(request: DeliveryRequest, options: DeliveryOptions): Promise<DeliveryResult> {
  const schedule = options.schedule ?? RETRY_SCHEDULE_MS;
  const send = options.send ?? httpSender;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxAttempts = Math.min(options.maxAttempts ?? schedule.length, schedule.length);
  const attempts: AttemptReport[] = [];
  for (let index = 0; index < maxAttempts; index++) {
    const scheduledAtMs = request.changedAtMs + (schedule[index] as number);
    await options.clock.sleepUntil(scheduledAtMs);
    const release = options.acquire ? await options.acquire() : () => undefined;
    const sentAtMs = options.clock.now();
    const started = performance.now();
    let result: SendResult;
    try {
      result = await send(request.url, request.body, request.headers, timeoutMs);
    } finally {
      release();
    }
    const attempt: AttemptReport = {
      attempt: index + 1,
      scheduledAtMs,
      sentAtMs: Math.round(sentAtMs),
      status: result.status,
      answer: answerOf(result),
      durationMs: Math.round(performance.now() - started),
    };
    attempts.push(attempt);
    const next = schedule[index + 1];
    options.onAttempt?.(
      attempt,
      result.status === 200 || index + 1 >= maxAttempts || next === undefined ? null : request.changedAtMs + next,
    );
    if (result.status === 200) return { attempts, delivered: true };
  }
  return { attempts, delivered: false };
}

/** A counting semaphore: `acquire()` resolves with a release function once a slot is free. */
export function concurrencyLimit(slots: number): () => Promise<() => void> {
  let free = Math.max(1, slots);
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  return () =>
    new Promise((resolve) => {
      const grant = (): void => {
        let released = false;
        resolve(() => {
          if (!released) {
            released = true;
            release();
          }
        });
      };
      if (free > 0) {
        free--;
        grant();
      } else waiting.push(grant);
    });
}
