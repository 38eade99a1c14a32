/** What a test gives the payment-service double (src/simulator/paymentServiceDouble.ts) and reads back from it. */

/** A POS's OAuth client, as the management panel would show it. */
export interface DoubleClient {
  posId: string;
  clientId: string;
  clientSecret: string;
}

export type DoubleEndpoint = 'token' | 'order' | 'refunds';

/**
 * One programmed misbehaviour, used by the next matching request (and `times` in all, default 1):
 * an HTTP status (429, 500, 503, ...) with an optional Retry-After, a delay before the answer, or a
 * dropped connection.
 */
export interface DoubleFault {
  /** Which endpoint it applies to; any when absent. */
  endpoint?: DoubleEndpoint;
  status?: number;
  retryAfter?: string;
  /** Answer this much later (with `status`, or with the normal answer). */
  delayMs?: number;
  /** Close the connection without an answer (a network error). */
  reset?: boolean;
  /**
   * Answer 200 with a body of this many bytes (Infinity: endless), streamed as fast as the client reads it;
   * with a Content-Length saying so when `declared` (and finite).
   */
  hugeBody?: number;
  declared?: boolean;
  times?: number;
}

/** What a request looked like, for tests: never the secret or the token itself. */
export interface DoubleRequest {
  endpoint: DoubleEndpoint | 'unknown';
  method: string;
  path: string;
  contentType: string | null;
  /** Which POS the bearer token belongs to (null: none, unknown or expired). */
  tokenPosId: string | null;
  status: number | null;
}

export interface PaymentServiceDoubleOptions {
  clients: readonly DoubleClient[];
  /** expires_in of each token (spec sample: 43199 s); tests use a short one. */
  tokenLifetimeSeconds?: number;
  /** Milliseconds since the epoch (injectable so tests can move time). */
  now?: () => number;
  /** Called after each change of the truth (an order's or refund's new version): where a state file is saved. */
  onChange?: () => void;
}

/** A test's description of an order; what is left out gets a realistic default. */
export interface DoubleOrderInput {
  orderId: string;
  merchantPosId: string;
  status: 'NEW' | 'PENDING' | 'WAITING_FOR_CONFIRMATION' | 'COMPLETED' | 'CANCELED';
  extOrderId?: string;
  totalAmount?: string;
  currencyCode?: string;
  /** The PAYMENT_ID property; none for NEW and usually PENDING. */
  paymentId?: string | null;
  /** payMethod.type (PBL, CARD_TOKEN, ...); kept from before when left out. */
  payMethodType?: string;
}

export interface DoubleRefundInput {
  refundId: string;
  status: 'PENDING' | 'FINALIZED' | 'CANCELED';
  amount?: string;
  currencyCode?: string;
  extRefundId?: string;
}
