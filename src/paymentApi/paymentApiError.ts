import type { PaymentApiEndpoint } from '../observability/reconciliationMetrics';

/**
 * Why a call failed:
 * - not_found: 404, the API does not know the order;
 * - forbidden: 403, e.g. INVALID_AUTH_FOR_THIS_ORDER (the order belongs to another POS);
 * - unauthorized: the POS's credentials are refused (the token endpoint, or a 401 after one token refresh);
 * - unavailable: retries exhausted on network errors, timeouts, 429 or 5xx (or a Retry-After too long to wait);
 * - invalid_answer: the answer is not in the spec's shape, has a status the spec does not give, or is larger
 *   than MAX_ANSWER_BYTES;
 * - no_credentials: no credentials configured for that POS;
 * - invalid_order_id: the id cannot be a path segment (idProblem), nothing was sent;
 * - cancelled: the caller's signal aborted (its client left).
 */
export type PaymentApiErrorKind =
  | 'not_found'
  | 'forbidden'
  | 'unauthorized'
  | 'unavailable'
  | 'invalid_answer'
  | 'no_credentials'
  | 'invalid_order_id'
  | 'cancelled';

export interface PaymentApiErrorDetails {
  endpoint: PaymentApiEndpoint;
  posId: string;
  /** The last answer's HTTP status; null when none came (network error, timeout). */
  httpStatus: number | null;
  correlationId: string | null;
  /** `status.codeLiteral` or `statusCode` of an error answer, e.g. INVALID_AUTH_FOR_THIS_ORDER. */
  code: string | null;
  /** What the API asked us to wait (Retry-After) when it last refused; callers back off at least that long. */
  retryAfterMs: number | null;
  /** Why the last attempt got no answer at all: no connection, or no answer within the timeout; null: it answered. */
  noAnswer: 'network' | 'timeout' | null;
  /** Attempts made (1 when no retry was worth it). */
  attempts: number;
}

/** The one error of the client; its message names the endpoint, POS and status, never a secret or a body byte. */
export class PaymentApiError extends Error {
  constructor(
    readonly kind: PaymentApiErrorKind,
    message: string,
    readonly details: PaymentApiErrorDetails,
  ) {
    super(message);
    this.name = 'PaymentApiError';
  }
}
