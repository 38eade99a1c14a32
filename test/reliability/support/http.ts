import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import { sign, SECOND_KEY } from '../../support/signing';
import { BASIC_HEADER, secrets } from './secrets';

export interface HttpResult {
  /** 0 when no HTTP answer arrived (connection refused or reset, client timeout). */
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** From the first byte written to the end of the answer (or the error). */
  ms: number;
  /** Epoch ms when the request was completely written (null if it never was). */
  sentAt: number | null;
  startedAt: number;
  error?: string;
}

export interface SendOptions {
  port: number;
  method?: string;
  path?: string;
  headers?: Record<string, string | number | string[]>;
  body?: Buffer;
  /** false: a new connection for this request only (Connection: close). */
  agent?: http.Agent | false;
  /** The client gives up after this long and reports `client_timeout` (a hang). */
  timeoutMs?: number;
  /** The loopback address to connect from (127.0.0.0/8 is all local), to be another peer than 127.0.0.1. */
  localAddress?: string;
}

/** One HTTP request to 127.0.0.1 that never rejects: failures come back as status 0 with the error code. */
export function send(options: SendOptions): Promise<HttpResult> {
  const startedAt = Date.now();
  if (options.body && (options.path ?? '/notifications') === '/notifications') secrets.addBody(options.body);
  return new Promise((resolve) => {
    let sentAt: number | null = null;
    let settled = false;
    const finish = (result: Omit<HttpResult, 'ms' | 'sentAt' | 'startedAt'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, ms: Date.now() - startedAt, sentAt, startedAt });
    };
    const req = http.request(
      {
        host: '127.0.0.1',
        port: options.port,
        method: options.method ?? 'POST',
        path: options.path ?? '/notifications',
        headers: options.headers ?? {},
        agent: options.agent ?? false,
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          finish({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', (error) =>
          finish({ status: 0, headers: {}, body: '', error: (error as NodeJS.ErrnoException).code ?? error.message }),
        );
      },
    );
    const timer = setTimeout(() => {
      finish({ status: 0, headers: {}, body: '', error: 'client_timeout' });
      req.destroy();
    }, options.timeoutMs ?? 30_000);
    req.on('finish', () => {
      sentAt = Date.now();
    });
    req.on('error', (error) =>
      finish({ status: 0, headers: {}, body: '', error: (error as NodeJS.ErrnoException).code ?? error.message }),
    );
    req.end(options.body);
  });
}

/** Answers counted by status, `ECONNRESET x2` for the unanswered: "200 x10, 503 x2", or "none". */
export function summarizeAnswers(results: readonly HttpResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    const key = r.status === 0 ? (r.error ?? 'no answer') : String(r.status);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, v]) => `${k} x${v}`).join(', ') || 'none';
}

/** A signature header like the payment service's; the signature is registered for the secrets scan. */
export function signatureFor(body: Buffer | string, key = SECOND_KEY, algorithm = 'MD5'): string {
  const header = sign(body, key, algorithm);
  secrets.addSignatureHeader(header);
  return header;
}

export interface NotificationHeaderOptions {
  basicAuth?: boolean;
  key?: string;
  algorithm?: string;
  extra?: Record<string, string | number | string[]>;
}

/** The headers the payment service sends with a notification (spec, "Events" delivery rule 6). */
export function notificationHeaders(
  body: Buffer,
  options: NotificationHeaderOptions = {},
): Record<string, string | number | string[]> {
  return {
    'Content-Type': 'application/json;charset=UTF-8',
    'Content-Length': body.length,
    'OpenSvc-Signature': signatureFor(body, options.key, options.algorithm),
    ...(options.basicAuth ? { Authorization: BASIC_HEADER } : {}),
    ...options.extra,
  };
}

export function postNotification(
  port: number,
  body: Buffer,
  options: NotificationHeaderOptions & { agent?: http.Agent | false; timeoutMs?: number } = {},
): Promise<HttpResult> {
  return send({
    port,
    body,
    headers: notificationHeaders(body, options),
    agent: options.agent,
    timeoutMs: options.timeoutMs,
  });
}

export async function getJson<T>(port: number, path: string): Promise<{ status: number; body: T }> {
  const result = await send({ port, method: 'GET', path, timeoutMs: 10_000 });
  return { status: result.status, body: (result.body ? JSON.parse(result.body) : null) as T };
}

/** Runs `worker` over `items` with at most `concurrency` at once; results in input order. */
export async function pool<T, R>(
  items: readonly T[],
  concurrency: number,
  worker: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    for (;;) {
      const index = next++;
      if (index >= items.length) return;
      results[index] = await worker(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** Whether a TCP connection to the port is accepted (false: refused or reset at once). */
export function portAccepts(port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (accepted: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(accepted);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export { freePort } from '../../support/net';

export interface HeldRequest {
  /** Sends the rest of the body: the request is then complete. */
  complete(): void;
  /** Resolves with the answer, or status 0 when the connection closed without one. */
  result: Promise<HttpResult>;
}

/**
 * A notification whose headers and first half of the body are sent now and the rest only when
 * complete() is called: a request the server is in the middle of reading.
 */
export function holdRequest(
  port: number,
  body: Buffer,
  headers: Record<string, string | number | string[]>,
): HeldRequest {
  const startedAt = Date.now();
  let resolveResult: (r: HttpResult) => void = () => undefined;
  const result = new Promise<HttpResult>((resolve) => {
    resolveResult = resolve;
  });
  let settled = false;
  const finish = (r: Omit<HttpResult, 'ms' | 'sentAt' | 'startedAt'>): void => {
    if (settled) return;
    settled = true;
    resolveResult({ ...r, ms: Date.now() - startedAt, sentAt: null, startedAt });
  };
  const req = http.request(
    { host: '127.0.0.1', port, method: 'POST', path: '/notifications', headers, agent: false },
    (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        finish({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', (e) =>
        finish({ status: 0, headers: {}, body: '', error: (e as NodeJS.ErrnoException).code ?? e.message }),
      );
    },
  );
  req.on('error', (e) =>
    finish({ status: 0, headers: {}, body: '', error: (e as NodeJS.ErrnoException).code ?? e.message }),
  );
  req.flushHeaders();
  const half = Math.floor(body.length / 2);
  req.write(body.subarray(0, half));
  return {
    complete: () => {
      if (!req.destroyed) req.end(body.subarray(half));
    },
    result,
  };
}
