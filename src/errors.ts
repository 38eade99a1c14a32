import type { IntakeOutcome } from './domain/outcomes';

/**
 * Every code an error answer carries, the one list: docs/openapi.yaml documents exactly these
 * (test/contracts checks it), and a code not listed here does not compile.
 */
export const ERROR_CODES = [
  // The public port, POST /notifications, in the order of its checks.
  'invalid_source_address',
  'source_not_allowed',
  'unsupported_media_type',
  'unsupported_content_encoding',
  'body_too_large',
  'invalid_basic_auth',
  'missing_signature_header',
  'missing_signature',
  'invalid_signature_encoding',
  'unsupported_algorithm',
  'invalid_signature',
  'algorithm_not_allowed',
  'pos_mismatch',
  'malformed_body',
  'request_aborted',
  'busy',
  'overloaded',
  'method_not_allowed',
  // The admin port.
  'unexpected_host',
  'cross_site_request',
  'too_many_failures',
  'unauthorized',
  'token_not_allowed',
  'bad_request',
  'invalid_order_id',
  'invalid_refund_id',
  'order_not_found',
  'refund_not_found',
  'unknown_pos',
  'pos_required',
  'reconciliation_off',
  'payment_api_unavailable',
  'admin_busy',
  'invalid_query',
  'queue_not_found',
  'queue_not_allowed',
  'broker_unavailable',
  'replay_incomplete',
  'invalid_expected_order',
  'too_many_orders',
  'checks_not_found',
  // Either port.
  'shutting_down',
  'recovering',
  'database_unavailable',
  'not_found',
  'internal_error',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The one error type for expected failures: an HTTP status, a stable machine-readable code, a
 * message safe to show the caller (never a key, signature or body), and the outcome it counts as.
 * `title`: the heading of the page a person reads it on (the console's, src/console/frame/consoleRouting.ts
 * `refusal`); the JSON answers leave it out.
 */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly outcome: IntakeOutcome | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly title: string | null = null,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** The exit code of a configuration that cannot be used as given (sysexits.h EX_CONFIG). */
export const EX_CONFIG = 78;

/**
 * A start that cannot go on: names the dependency and the setting to look at, logged as one line
 * by the entry point (`cannot connect to Postgres at 127.0.0.1:5999 (DATABASE_URL): ECONNREFUSED`).
 * `exitCode`: EX_CONFIG when the setting's value itself is refused (an unsafe DATA_DIR), not a failure.
 */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly setting: string,
    readonly exitCode: 1 | typeof EX_CONFIG = 1,
  ) {
    super(message);
    this.name = 'StartupError';
  }
}

/** An error's code (ECONNREFUSED, 28P01) or else its message; an AggregateError's first code. For a log line. */
export function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { code } = error as Error & { code?: unknown };
  if (typeof code === 'string') return code;
  if (error instanceof AggregateError && error.errors.length > 0) return reasonOf(error.errors[0]);
  return error.message !== '' ? error.message : String(error);
}
