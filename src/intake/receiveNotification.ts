import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isDatabaseUnavailable } from '../database/databaseErrors';
import { DELIVERY_OUTCOMES, type DeliveryOutcome, type IntakeOutcome } from '../domain/outcomes';
import { RequestError } from '../errors';
import type { Logger } from '../observability/logger';
import type { MetricKind, Metrics } from '../observability/metrics';
import { parseNotification, type ParseResult } from '../parsing/parseNotification';
import { RecorderHeld, RecorderOverloaded, RecorderStopping } from '../recording/recorder';
import type { Delivery, NotificationStore, DeliveryKept } from '../recording/notificationStore';
import { signersFor } from '../verification/posBinding';
import type { SecondKey } from '../verification/secondKeys';
import {
  parseSignatureHeader,
  type SignatureHeader,
  type SignatureHeaderProblem,
} from '../verification/signatureHeader';
import { verifySignature, type SignatureMatch } from '../verification/verifySignature';
import { readRawBody } from './readRawBody';
import { basicAuthMatches, declaredLengthExceeds, isJsonContentType, readProcessingTime } from './requestChecks';
import { sourceResolver, type SourceAllowlist, type TrustProxy } from './sourceAddress';
import type { UnverifiedBodies } from './unverifiedBodies';

/** What the intake reads of the configuration. */
export interface IntakeSettings {
  secondKeys: readonly SecondKey[];
  sourceAllowlist: SourceAllowlist;
  trustProxy: TrustProxy;
  notifyBasicAuth: { user: string; password: string } | null;
  bodyLimitBytes: number;
}

export interface IntakeOptions {
  config: IntakeSettings;
  store: NotificationStore;
  /** The budget of bytes held for bodies not verified yet (UNVERIFIED_BODIES_LIMIT). */
  unverified: UnverifiedBodies;
  metrics: Metrics;
  logger: Logger;
}

/** Seconds a sender is asked to wait before trying again after a 503. */
const RETRY_AFTER = { 'Retry-After': '5' };

/** The 200 answers, built once: the hot path writes a ready buffer instead of serializing per request. */
const OK_ANSWERS = new Map<DeliveryOutcome, Buffer>(
  DELIVERY_OUTCOMES.map((outcome) => [outcome, Buffer.from(JSON.stringify({ outcome }))]),
);

const SIGNATURE_MESSAGES: Record<SignatureHeaderProblem, string> = {
  missing_signature_header: 'OpenSvc-Signature header is missing',
  missing_signature: 'signature header has no single signature field',
  invalid_signature_encoding: 'signature is not hex of the length its algorithm produces',
  unsupported_algorithm: 'signature algorithm is not one of MD5, SHA-1, SHA-256, SHA-384, SHA-512',
};

const refused = {
  source: () =>
    new RequestError(403, 'source_not_allowed', 'source address is not an allowed sender', 'rejected_source'),
  unreadableSource: () =>
    new RequestError(
      400,
      'invalid_source_address',
      'the sender address (socket or X-Forwarded-For) is not an IP address written the standard way',
      'rejected_source',
    ),
  mediaType: () =>
    new RequestError(415, 'unsupported_media_type', 'Content-Type must be application/json', 'unsupported_media_type'),
  encoding: () =>
    new RequestError(
      415,
      'unsupported_content_encoding',
      'Content-Encoding is not supported',
      'unsupported_media_type',
    ),
  tooLarge: (limit: number) => new RequestError(413, 'body_too_large', `body exceeds ${limit} bytes`, 'too_large'),
  basicAuth: () =>
    new RequestError(401, 'invalid_basic_auth', 'Basic authorization is missing or wrong', 'rejected_auth', {
      'WWW-Authenticate': 'Basic realm="notifications"',
    }),
  signatureHeader: (problem: SignatureHeaderProblem) =>
    new RequestError(401, problem, SIGNATURE_MESSAGES[problem], 'rejected_signature'),
  signature: () =>
    new RequestError(
      401,
      'invalid_signature',
      'signature does not match the body for any configured key',
      'rejected_signature',
    ),
  algorithm: () =>
    new RequestError(
      401,
      'algorithm_not_allowed',
      'the key that verifies this signature requires a stronger algorithm',
      'rejected_signature',
    ),
  pos: (message: string) => new RequestError(401, 'pos_mismatch', message, 'rejected_pos'),
  busy: () =>
    new RequestError(503, 'busy', 'too many notifications are being received at once; retry later', null, RETRY_AFTER),
  overloaded: () =>
    new RequestError(503, 'overloaded', 'too many notifications at once; retry later', null, RETRY_AFTER),
  stopping: () => new RequestError(503, 'shutting_down', 'the service is stopping; retry later', null, RETRY_AFTER),
  recovering: () =>
    new RequestError(
      503,
      'recovering',
      'the database failed over and what it lost is being restored; retry later',
      null,
      RETRY_AFTER,
    ),
  databaseUnavailable: () =>
    new RequestError(
      503,
      'database_unavailable',
      'the notification could not be recorded now; retry later',
      null,
      RETRY_AFTER,
    ),
};

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * POST /notifications, step by step, cheapest and least trusting first: who sent it, what it is, Basic
 * auth, the signature header, the body (bounded in memory until verified), the signature, then parse and
 * record. Nothing refused before the signature is checked touches the database, and 200 is sent only
 * after the commit. Refusals are RequestErrors, answered by the listener (publicListener.ts).
 */
export function notificationReceiver(
  options: IntakeOptions,
): (req: IncomingMessage, res: ServerResponse, requestId: string) => Promise<void> {
  const { config, store, unverified, metrics, logger } = options;
  const sourceOf = sourceResolver(config.trustProxy, config.sourceAllowlist);
  const count = (kind: MetricKind, outcome: IntakeOutcome) => metrics.notifications.inc({ kind, outcome });

  /** The sender's address, when the allowlist lets it in. */
  function checkSource(req: IncomingMessage): string {
    const source = sourceOf(req.socket.remoteAddress, header(req, 'x-forwarded-for'));
    if (!source.ok) throw refused.unreadableSource();
    if (!source.allowed) throw refused.source();
    return source.address;
  }

  function checkRequest(req: IncomingMessage): SignatureHeader {
    if (!isJsonContentType(header(req, 'content-type'))) throw refused.mediaType();
    const encoding = header(req, 'content-encoding');
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw refused.encoding();
    // Answered before a byte of the body is read; Node discards whatever the sender still sends.
    if (declaredLengthExceeds(header(req, 'content-length'), config.bodyLimitBytes)) {
      throw refused.tooLarge(config.bodyLimitBytes);
    }
    if (config.notifyBasicAuth && !basicAuthMatches(header(req, 'authorization'), config.notifyBasicAuth)) {
      throw refused.basicAuth();
    }
    // Spec, "Authentication" item 7: OpenSvc-Signature, else X-OpenSvc-Signature.
    const signature = parseSignatureHeader(header(req, 'opensvc-signature') ?? header(req, 'x-opensvc-signature'));
    if (!signature.ok) throw refused.signatureHeader(signature.problem);
    return signature.header;
  }

  /** The body and the keys that verify it; the body's bytes count against the unverified budget until then. */
  async function readAndVerify(req: IncomingMessage, signature: SignatureHeader) {
    const declared = Number(header(req, 'content-length') ?? Number.NaN);
    const release = unverified.reserve(Number.isFinite(declared) ? declared : config.bodyLimitBytes);
    if (!release) {
      // Unread: throw the rest away (nothing is buffered) so the sender reads the 503 before the connection closes.
      req.resume();
      throw refused.busy();
    }
    try {
      const body = await readRawBody(req, config.bodyLimitBytes);
      const { matches, algorithmRefused } = verifySignature(signature, body, config.secondKeys);
      if (algorithmRefused) throw refused.algorithm();
      if (matches.length === 0) throw refused.signature();
      return { body, matches };
    } finally {
      release();
    }
  }

  async function record(delivery: Delivery, parsed: ParseResult, requestId: string): Promise<DeliveryKept> {
    let result;
    try {
      // The answer waits for the real outcome, and it comes in bounded time: a notification still queued or
      // mid-batch when its answer time passes is refused by the recorder (never written), and a COMMIT on
      // its way is waited for half a second past it at most (then 503, its outcome unknown: the sender's
      // retry finds it recorded or records it).
      result = await (parsed.ok
        ? store.record(delivery, parsed.notification)
        : store.quarantine(delivery, parsed.reason, parsed.detail));
    } catch (error) {
      if (error instanceof RecorderStopping) {
        logger.warn({ requestId }, 'the service is stopping; answered 503');
        throw refused.stopping();
      }
      if (error instanceof RecorderHeld) {
        logger.warn({ requestId }, 'writes held while a failover is restored; answered 503');
        throw refused.recovering();
      }
      if (error instanceof RecorderOverloaded) {
        logger.warn({ requestId, reason: error.message }, 'recorder overloaded; answered 503');
        throw refused.overloaded();
      }
      if (isDatabaseUnavailable(error)) {
        logger.warn({ requestId, err: { message: (error as Error).message } }, 'database unavailable; answered 503');
        throw refused.databaseUnavailable();
      }
      throw error;
    }
    if (result.outcome === 'refused') throw refused.pos('signature key belongs to another POS than this order');
    return result;
  }

  /** Metrics and logs of a recorded delivery; nothing of the body but its identifiers. */
  function observe(result: DeliveryKept, parsed: ParseResult, requestId: string): void {
    const kind: MetricKind = parsed.ok ? parsed.notification.kind : 'unknown';
    count(kind, result.outcome);
    if (result.newVariant) metrics.variants.inc({ kind });
    for (const field of result.disagreements) metrics.disagreements.inc({ kind, field });
    const fields = () => ({
      requestId,
      outcome: result.outcome,
      posId: result.posId,
      ...(parsed.ok
        ? {
            kind,
            orderId: parsed.notification.orderId,
            ...(parsed.notification.kind === 'refund' ? { refundId: parsed.notification.refundId } : {}),
            status: parsed.notification.status,
          }
        : { quarantineReason: parsed.reason, detail: parsed.detail }),
    });
    if (result.disagreements.length > 0) {
      logger.warn(
        { ...fields(), disagreements: result.disagreements },
        'notification disagrees with facts already recorded: the first values are kept',
      );
    }
    if (result.outcome === 'conflict') {
      logger.error(
        { ...fields(), keptStatus: result.currentStatus },
        'conflicting final statuses: the first one is kept',
      );
    } else if (result.outcome === 'quarantined') {
      logger.warn(fields(), 'authentic notification quarantined: it could not be read');
    } else if (logger.isLevelEnabled('debug')) {
      // Every delivery is in the audit trail (deliveries table) and the metrics; a log line per notification
      // costs a write per request, so it is debug-level.
      logger.debug(fields(), 'notification recorded');
    }
  }

  return async (req, res, requestId) => {
    let sourceAddress: string | undefined;
    try {
      sourceAddress = checkSource(req);
      const signature = checkRequest(req);
      const { body, matches } = await readAndVerify(req, signature);
      const parsed = parseNotification(body);
      // A key vouches for its own POS only: a body naming its POS is vouched for by that POS's keys.
      const signers: SignatureMatch[] = signersFor(
        matches,
        parsed.ok && parsed.notification.kind === 'order' ? parsed.notification.merchantPosId : null,
      );
      if (signers.length === 0) throw refused.pos('signature key belongs to another POS than order.merchantPosId');
      const delivery: Delivery = {
        body,
        bodySha256: createHash('sha256').update(body).digest(),
        signers,
        sourceAddress,
        observedVia: 'notification',
        processingTimeMs: readProcessingTime(header(req, 'svc-processing-time')),
        signature,
      };
      const result = await record(delivery, parsed, requestId);
      observe(result, parsed, requestId);
      const answer = OK_ANSWERS.get(result.outcome) as Buffer;
      res
        .writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': answer.length })
        .end(answer);
    } catch (error) {
      if (error instanceof RequestError && error.outcome !== null) {
        // Refused requests are unauthenticated: what they claim to be is not worth a label.
        count('unknown', error.outcome);
        logger.warn({ requestId, code: error.code, sourceAddress }, 'notification refused');
      }
      throw error;
    }
  };
}
