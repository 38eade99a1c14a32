import type { Logger } from '../observability/logger';
import { idProblem } from '../parsing/identifiers';
import type { PaymentApiEndpoint, PaymentApiMetrics, TokenFetchResult } from '../observability/reconciliationMetrics';
import {
  AnswerError,
  errorCodesOf,
  parseOrderAnswer,
  parseRefundsAnswer,
  parseTokenAnswer,
  type RetrievedOrder,
  type RetrievedRefund,
} from './paymentApiAnswers';
import type { PaymentApiCredential } from './credentials';
import { abortReason, createRequestLimiter, type AcquireRequestSlot } from './requestLimiter';
import { PaymentApiError, type PaymentApiErrorDetails, type PaymentApiErrorKind } from './paymentApiError';
import { MAX_ANSWER_BYTES, readAnswer } from './readAnswer';
import { backoffMs } from '../domain/backoff';
import { DEFAULT_RETRY, isRetryableStatus, parseRetryAfter, type RetryOptions } from './retryPolicy';

export type { RetrievedOrder, RetrievedRefund, RetrievedOrderStatus } from './paymentApiAnswers';
export type { PaymentApiCredential } from './credentials';
export { PaymentApiError, type PaymentApiErrorDetails, type PaymentApiErrorKind } from './paymentApiError';
export { MAX_ANSWER_BYTES } from './readAnswer';
export { DEFAULT_RETRY, type RetryOptions } from './retryPolicy';

/** An answer of the payment API: its exact bytes (stored as received), what they say, and its Correlation-Id. */
export interface ApiAnswer<T> {
  body: Buffer;
  value: T;
  correlationId: string | null;
}

/**
 * The payment service's API as the reconciler uses it (spec, "Endpoints" 3 and 7), with the POS's own token. A
 * call whose `signal` aborts (its caller left) stops where it is, waiting or reading, and fails `cancelled`.
 */
export interface PaymentApi {
  /** GET /api/v2_1/orders/{orderId} */
  retrieveOrder(posId: string, orderId: string, signal?: AbortSignal): Promise<ApiAnswer<RetrievedOrder>>;
  /** GET /api/v2_1/orders/{orderId}/refunds */
  listRefunds(posId: string, orderId: string, signal?: AbortSignal): Promise<ApiAnswer<RetrievedRefund[]>>;
}

export interface PaymentApiOptions {
  /** PAYMENT_API_URL, e.g. https://secure.example.com (no trailing path). */
  baseUrl: string;
  credentials: readonly PaymentApiCredential[];
  /** Per attempt, answer body included. */
  timeoutMs: number;
  maxInFlight: number;
  maxPerSecond: number;
  logger: Logger;
  metrics?: PaymentApiMetrics;
  retry?: Partial<RetryOptions>;
  /** A token is fetched again this long before it expires (at most half its lifetime). Default 60 s. */
  tokenRefreshMarginMs?: number;
  random?: () => number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
}

const TOKEN_PATH = '/pl/standard/user/oauth/authorize';

/** Why an attempt got no usable answer; `too_large` and `cancelled` are not retried. */
type AttemptFailure = 'network' | 'timeout' | 'too_large' | 'cancelled';

type Attempt =
  | { answered: true; status: number; body: Buffer; headers: Headers; correlationId: string | null }
  | { answered: false; failure: AttemptFailure };

type Answered = Extract<Attempt, { answered: true }>;

interface CachedToken {
  accessToken: string;
  refreshAtMs: number;
}

// Node's fetch rejects with the signal's reason, a DOMException (not always an Error instance).
const isTimeout = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'name' in error && error.name === 'TimeoutError';

/** Resolves after `wait`, or rejects with the signal's reason as soon as it aborts. */
function abortable(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const abort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', abort, { once: true });
    void wait.then(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    });
  });
}

/**
 * The payment-API client: OAuth client_credentials per POS (one cached token each, fetched again
 * shortly before it expires and once on a 401), per-attempt timeouts, retries with exponential
 * backoff and full jitter on network errors, timeouts, 429 (honouring Retry-After) and 5xx, and a
 * cap on requests in flight and per second shared by every POS. Logs carry the endpoint, POS, HTTP
 * status and Correlation-Id; never a secret, a token or a byte of an answer.
 */
export function createPaymentApi(options: PaymentApiOptions): PaymentApi {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const retry: RetryOptions = { ...DEFAULT_RETRY, ...options.retry };
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const fetchAnswer = options.fetch ?? fetch;
  const refreshMarginMs = options.tokenRefreshMarginMs ?? 60_000;
  const { logger, metrics } = options;
  const credentials = new Map(options.credentials.map((c) => [c.posId, c]));
  const acquire: AcquireRequestSlot = createRequestLimiter({
    maxInFlight: options.maxInFlight,
    maxPerSecond: options.maxPerSecond,
    now,
    sleep,
  });
  const tokens = new Map<string, CachedToken>();
  const tokenFetches = new Map<string, Promise<string>>();

  // Every series of a configured POS exists from the start, so an alert on wrong credentials needs no first failure.
  for (const posId of credentials.keys())
    for (const result of ['ok', 'unauthorized', 'unavailable', 'invalid_answer'] as const)
      metrics?.tokenFetches.inc({ pos_id: posId, result }, 0);

  const failure = (
    kind: PaymentApiErrorKind,
    message: string,
    details: Partial<PaymentApiErrorDetails> & Pick<PaymentApiErrorDetails, 'endpoint' | 'posId'>,
  ): PaymentApiError =>
    new PaymentApiError(kind, message, {
      httpStatus: null,
      correlationId: null,
      code: null,
      retryAfterMs: null,
      noAnswer: null,
      attempts: 1,
      ...details,
    });

  /** One attempt, within the limits, the timeout and the answer cap; throws only when `cancel` aborts first. */
  async function attempt(
    endpoint: PaymentApiEndpoint,
    url: string,
    init: RequestInit,
    cancel: AbortSignal | undefined,
  ): Promise<Attempt> {
    const release = await acquire(cancel);
    const started = performance.now();
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const drop = new AbortController();
    const signal = AbortSignal.any([timeout, drop.signal, ...(cancel ? [cancel] : [])]);
    let result: Attempt;
    try {
      const response = await fetchAnswer(url, { ...init, redirect: 'manual', signal });
      // The signal also bounds reading the body.
      const body = await readAnswer(response, MAX_ANSWER_BYTES);
      if (body === null) drop.abort();
      result =
        body === null
          ? { answered: false, failure: 'too_large' }
          : {
              answered: true,
              status: response.status,
              body,
              headers: response.headers,
              correlationId: response.headers.get('correlation-id'),
            };
    } catch (error) {
      result = {
        answered: false,
        failure: cancel?.aborted ? 'cancelled' : timeout.aborted || isTimeout(error) ? 'timeout' : 'network',
      };
    } finally {
      release();
    }
    const seconds = (performance.now() - started) / 1000;
    metrics?.requests.inc({ endpoint, status: result.answered ? String(result.status) : result.failure });
    metrics?.requestDuration.observe({ endpoint }, seconds);
    return result;
  }

  /**
   * Attempts until an answer that is not worth retrying, or throws: `unavailable` once retries are spent,
   * `invalid_answer` for an answer past MAX_ANSWER_BYTES, `cancelled` when `cancel` aborts.
   */
  async function send(
    endpoint: PaymentApiEndpoint,
    posId: string,
    url: string,
    init: RequestInit,
    cancel?: AbortSignal,
  ): Promise<Answered> {
    const cancelled = (): PaymentApiError =>
      failure('cancelled', `payment API ${endpoint}: cancelled, the caller left`, { endpoint, posId });
    for (let attemptNumber = 1; ; attemptNumber++) {
      let result: Attempt;
      try {
        result = await attempt(endpoint, url, init, cancel);
      } catch (error) {
        if (cancel?.aborted) throw cancelled();
        throw error;
      }
      const status = result.answered ? result.status : result.failure;
      const correlationId = result.answered ? result.correlationId : null;
      logger.debug({ endpoint, posId, attempt: attemptNumber, status, correlationId }, 'payment API answer');
      if (result.answered && !isRetryableStatus(result.status)) return result;
      if (!result.answered && result.failure === 'cancelled') throw cancelled();
      if (!result.answered && result.failure === 'too_large')
        throw failure('invalid_answer', `payment API ${endpoint}: answer larger than ${MAX_ANSWER_BYTES} bytes`, {
          endpoint,
          posId,
        });

      const retryAfterMs = result.answered ? parseRetryAfter(result.headers.get('retry-after'), now()) : null;
      const details = {
        endpoint,
        posId,
        httpStatus: result.answered ? result.status : null,
        correlationId,
        code: result.answered ? codeOf(result.body) : null,
        retryAfterMs,
        noAnswer: result.answered ? null : result.failure === 'timeout' ? ('timeout' as const) : ('network' as const),
        attempts: attemptNumber,
      };
      if (attemptNumber >= retry.maxAttempts)
        throw failure('unavailable', `payment API ${endpoint}: ${status} after ${attemptNumber} attempt(s)`, details);
      if (retryAfterMs !== null && retryAfterMs > retry.maxRetryAfterMs)
        throw failure('unavailable', `payment API ${endpoint}: ${status}, asked to wait ${retryAfterMs} ms`, details);
      const delayMs = Math.max(retryAfterMs ?? 0, backoffMs(retry.backoff, attemptNumber, random));
      logger.debug({ endpoint, posId, attempt: attemptNumber, status, delayMs }, 'payment API retry');
      try {
        await abortable(sleep(delayMs), cancel);
      } catch {
        throw cancelled();
      }
    }
  }

  function codeOf(body: Buffer): string | null {
    const codes = errorCodesOf(body);
    return codes.codeLiteral ?? codes.statusCode;
  }

  async function fetchToken(credential: PaymentApiCredential): Promise<string> {
    const { posId } = credential;
    const count = (result: TokenFetchResult): void => metrics?.tokenFetches.inc({ pos_id: posId, result });
    let answer: Answered;
    try {
      answer = await send('token', posId, `${baseUrl}${TOKEN_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: credential.clientId,
          client_secret: credential.clientSecret,
        }).toString(),
      });
    } catch (error) {
      count('unavailable');
      throw error;
    }
    const details = {
      endpoint: 'token' as const,
      posId,
      httpStatus: answer.status,
      correlationId: answer.correlationId,
      code: answer.status === 200 ? null : codeOf(answer.body),
    };
    // 400 invalid_client is OAuth's other way to refuse credentials (RFC 6749 5.2).
    if (answer.status === 400 || answer.status === 401 || answer.status === 403) {
      count('unauthorized');
      throw failure(
        'unauthorized',
        `payment API token: credentials of POS ${posId} refused (${answer.status})`,
        details,
      );
    }
    if (answer.status !== 200) {
      count('invalid_answer');
      throw failure('invalid_answer', `payment API token: unexpected HTTP status ${answer.status}`, details);
    }
    try {
      const token = parseTokenAnswer(answer.body);
      const lifetimeMs = token.expiresInSeconds * 1000;
      tokens.set(posId, {
        accessToken: token.accessToken,
        refreshAtMs: now() + lifetimeMs - Math.min(refreshMarginMs, lifetimeMs / 2),
      });
      count('ok');
      return token.accessToken;
    } catch (error) {
      if (!(error instanceof AnswerError)) throw error;
      count('invalid_answer');
      throw failure('invalid_answer', `payment API token: ${error.message}`, details);
    }
  }

  /** The POS's cached token, or a fresh one; callers at once share one fetch. */
  function tokenFor(credential: PaymentApiCredential): Promise<string> {
    const cached = tokens.get(credential.posId);
    if (cached && now() < cached.refreshAtMs) return Promise.resolve(cached.accessToken);
    let pending = tokenFetches.get(credential.posId);
    if (!pending) {
      pending = fetchToken(credential).finally(() => tokenFetches.delete(credential.posId));
      tokenFetches.set(credential.posId, pending);
    }
    return pending;
  }

  function forgetToken(posId: string, accessToken: string): void {
    if (tokens.get(posId)?.accessToken === accessToken) tokens.delete(posId);
  }

  async function get<T>(
    endpoint: Exclude<PaymentApiEndpoint, 'token'>,
    posId: string,
    orderId: string,
    path: (orderSegment: string) => string,
    parse: (body: Buffer) => T,
    cancel: AbortSignal | undefined,
  ): Promise<ApiAnswer<T>> {
    const credential = credentials.get(posId);
    if (!credential)
      throw failure('no_credentials', `no payment API credentials for POS ${posId}`, { endpoint, posId });
    // Never a path of another meaning (`..` is the parent, `/` another level): refused before a byte is sent.
    const problem = idProblem(orderId);
    if (problem !== null) throw failure('invalid_order_id', `payment API ${endpoint}: ${problem}`, { endpoint, posId });
    if (cancel?.aborted)
      throw failure('cancelled', `payment API ${endpoint}: cancelled, the caller left`, { endpoint, posId });
    for (let refreshed = false; ; refreshed = true) {
      const accessToken = await tokenFor(credential);
      // A GET must carry no body (spec, "Endpoints": a GET with a body is answered 403).
      const answer = await send(
        endpoint,
        posId,
        `${baseUrl}${path(encodeURIComponent(orderId))}`,
        { method: 'GET', headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } },
        cancel,
      );
      const details = {
        endpoint,
        posId,
        httpStatus: answer.status,
        correlationId: answer.correlationId,
        code: answer.status === 200 ? null : codeOf(answer.body),
      };
      if (answer.status === 401) {
        // The token expired or was revoked before we thought: fetch another, once.
        forgetToken(posId, accessToken);
        if (!refreshed) continue;
        throw failure('unauthorized', `payment API ${endpoint}: 401 for POS ${posId} with a fresh token`, details);
      }
      if (answer.status === 404) throw failure('not_found', `payment API ${endpoint}: order not found`, details);
      if (answer.status === 403)
        throw failure(
          'forbidden',
          `payment API ${endpoint}: 403 ${details.code ?? 'refused'} for POS ${posId}`,
          details,
        );
      if (answer.status !== 200)
        throw failure('invalid_answer', `payment API ${endpoint}: unexpected HTTP status ${answer.status}`, details);
      try {
        return { body: answer.body, value: parse(answer.body), correlationId: answer.correlationId };
      } catch (error) {
        if (!(error instanceof AnswerError)) throw error;
        throw failure('invalid_answer', `payment API ${endpoint}: ${error.message}`, details);
      }
    }
  }

  const orderPath = (segment: string): string => `/api/v2_1/orders/${segment}`;

  return {
    retrieveOrder: (posId, orderId, signal) =>
      get('order', posId, orderId, orderPath, (body) => parseOrderAnswer(body, orderId), signal),
    listRefunds: (posId, orderId, signal) =>
      get('refunds', posId, orderId, (segment) => `${orderPath(segment)}/refunds`, parseRefundsAnswer, signal),
  };
}
