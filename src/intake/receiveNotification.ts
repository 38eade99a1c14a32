import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction } from 'express';
import type { Config } from '../config';
import { RequestError } from '../errors';
import type { Logger } from '../observability/logger';
import type { MetricKind, Metrics, NotificationOutcome } from '../observability/metrics';
import { parseNotification } from '../parsing/parseNotification';
import { isDatabaseUnavailable } from '../recording/database';
import { RecorderOverloaded } from '../recording/groupCommit';
import type { NotificationStore } from '../recording/notificationStore';
import type { Delivery, RecordResult } from '../recording/recordNotification';
import type { DeliveryOutcome } from '../recording/schema';
import { parseSignatureHeader, type SignatureHeaderProblem } from '../verification/signatureHeader';
import { verifySignature } from '../verification/verifySignature';
import type { PublicHandler, PublicResponse } from './publicApp';
import { readRawBody } from './readRawBody';
import { basicAuthMatches, declaredLengthExceeds, isJsonContentType, readProcessingTime } from './requestChecks';

export interface IntakeOptions {
  config: Pick<Config, 'secondKeys' | 'sourceAllowlist' | 'notifyBasicAuth' | 'bodyLimitBytes'>;
  store: NotificationStore;
  metrics: Metrics;
  logger: Logger;
  /** Called after a commit that wrote outbox events (wakes the in-process relay). */
  onEventsWritten?: () => void;
}

interface HandlerOptions extends IntakeOptions {
  /** The sender's address (the socket peer, or what TRUST_PROXY selects from X-Forwarded-For). */
  clientAddress: (req: IncomingMessage) => string | undefined;
}

const RETRY_AFTER_SECONDS = '5';

/** The 200 answers, built once: the hot path writes a ready buffer instead of serializing per request. */
const OK_ANSWERS: Readonly<Record<DeliveryOutcome, string>> = Object.fromEntries(
  (['accepted', 'duplicate', 'stale', 'conflict', 'quarantined'] as const).map((outcome) => [
    outcome,
    JSON.stringify({ outcome }),
  ]),
) as Record<DeliveryOutcome, string>;

const SIGNATURE_MESSAGES: Record<SignatureHeaderProblem, string> = {
  missing_signature_header: 'OpenSvc-Signature header is missing',
  missing_signature: 'signature header has no single signature field',
  invalid_signature_encoding: 'signature is not hex of the length its algorithm produces',
  unsupported_algorithm: 'signature algorithm is not one of MD5, SHA-1, SHA-256, SHA-384, SHA-512',
};

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * POST /notifications. Checks run cheapest and least trusting first (source address, content type
 * and size, Basic auth, signature, then parse and persist); nothing refused before the signature
 * check touches the database, and 200 is sent only after the commit.
 */
export function receiveNotification(options: HandlerOptions): PublicHandler {
  const { config, store, metrics, logger } = options;
  const count = (kind: MetricKind, outcome: NotificationOutcome) => metrics.notifications.inc({ kind, outcome });

  return async (req: IncomingMessage, res: PublicResponse, next: NextFunction): Promise<void> => {
    try {
      const sourceAddress = options.clientAddress(req);
      if (!config.sourceAllowlist.allows(sourceAddress)) {
        throw new RequestError(403, 'source_not_allowed', 'source address is not an allowed sender', 'rejected_source');
      }
      if (!isJsonContentType(header(req, 'content-type'))) {
        throw new RequestError(
          415,
          'unsupported_media_type',
          'Content-Type must be application/json',
          'unsupported_media_type',
        );
      }
      const encoding = header(req, 'content-encoding');
      if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
        throw new RequestError(
          415,
          'unsupported_content_encoding',
          'Content-Encoding is not supported',
          'unsupported_media_type',
        );
      }
      if (declaredLengthExceeds(header(req, 'content-length'), config.bodyLimitBytes)) {
        // Answered before a byte of the body is read; Node discards whatever the sender still sends.
        throw new RequestError(413, 'body_too_large', `body exceeds ${config.bodyLimitBytes} bytes`, 'too_large');
      }
      if (config.notifyBasicAuth && !basicAuthMatches(header(req, 'authorization'), config.notifyBasicAuth)) {
        throw new RequestError(401, 'invalid_basic_auth', 'Basic authorization is missing or wrong', 'rejected_auth', {
          'WWW-Authenticate': 'Basic realm="notifications"',
        });
      }
      // Spec, "Authentication" item 7: OpenSvc-Signature, else X-OpenSvc-Signature.
      const signatureHeader = parseSignatureHeader(
        header(req, 'opensvc-signature') ?? header(req, 'x-opensvc-signature'),
      );
      if (!signatureHeader.ok) {
        throw new RequestError(
          401,
          signatureHeader.problem,
          SIGNATURE_MESSAGES[signatureHeader.problem],
          'rejected_signature',
        );
      }

      const body = await readRawBody(req, config.bodyLimitBytes);
      const matches = verifySignature(signatureHeader.header, body, config.secondKeys);
      if (matches.length === 0) {
        throw new RequestError(
          401,
          'invalid_signature',
          'signature does not match the body for any configured key',
          'rejected_signature',
        );
      }

      const parsed = parseNotification(body);
      let match = matches[0] as (typeof matches)[number];
      if (parsed.ok && parsed.notification.kind === 'order' && parsed.notification.merchantPosId !== null) {
        const posId = parsed.notification.merchantPosId;
        const forPos = matches.find((m) => m.posId === posId);
        if (!forPos) {
          throw new RequestError(
            401,
            'pos_mismatch',
            'signature key belongs to another POS than order.merchantPosId',
            'rejected_signature',
          );
        }
        match = forPos;
      }

      const delivery: Delivery = {
        body,
        bodySha256: createHash('sha256').update(body).digest(),
        posId: match.posId,
        keyFingerprint: match.keyFingerprint,
        sourceAddress: sourceAddress ?? null,
        processingTimeMs: readProcessingTime(header(req, 'svc-processing-time')),
      };

      let result: RecordResult;
      try {
        // The answer waits for the real outcome, and it comes in bounded time: a notification still
        // queued or mid-batch when its answer time passes is refused by the recorder (never
        // written), and a COMMIT on its way is waited for half a second past it at most (then 503,
        // its outcome unknown: the sender's retry finds it recorded or records it).
        result = await (parsed.ok
          ? store.record(delivery, parsed.notification)
          : store.quarantine(delivery, parsed.reason, parsed.detail));
      } catch (error) {
        if (error instanceof RecorderOverloaded) {
          logger.warn({ requestId: res.requestId, reason: error.message }, 'recorder overloaded; answered 503');
          throw new RequestError(503, 'overloaded', 'too many notifications at once; retry later', null, {
            'Retry-After': RETRY_AFTER_SECONDS,
          });
        }
        if (isDatabaseUnavailable(error)) {
          logger.warn(
            { requestId: res.requestId, err: { message: (error as Error).message } },
            'database unavailable; answered 503',
          );
          throw new RequestError(
            503,
            'database_unavailable',
            'the notification could not be recorded now; retry later',
            null,
            {
              'Retry-After': RETRY_AFTER_SECONDS,
            },
          );
        }
        throw error;
      }

      const kind: MetricKind = parsed.ok ? parsed.notification.kind : 'unknown';
      count(kind, result.outcome);
      if (result.newVariant) metrics.variants.inc({ kind });
      if (result.eventsWritten > 0) options.onEventsWritten?.();

      const logFields = () => ({
        requestId: res.requestId,
        outcome: result.outcome,
        posId: match.posId,
        ...(parsed.ok
          ? {
              kind,
              orderId: parsed.notification.orderId,
              ...(parsed.notification.kind === 'refund' ? { refundId: parsed.notification.refundId } : {}),
              status: parsed.notification.status,
            }
          : { quarantineReason: parsed.reason, detail: parsed.detail }),
      });
      if (result.outcome === 'conflict') {
        logger.error(
          { ...logFields(), keptStatus: result.currentStatus },
          'conflicting final statuses: the first one is kept',
        );
      } else if (result.outcome === 'quarantined') {
        logger.warn(logFields(), 'authentic notification quarantined: it could not be read');
      } else if (logger.isLevelEnabled('debug')) {
        // Every delivery is in the audit trail (deliveries table) and the metrics; a log line per
        // notification costs a write per request, so it is debug-level.
        logger.debug(logFields(), 'notification recorded');
      }
      const answer = OK_ANSWERS[result.outcome];
      res
        .writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': answer.length })
        .end(answer);
    } catch (error) {
      if (error instanceof RequestError && error.outcome !== null) {
        // Refused requests are unauthenticated: what they claim to be is not worth a label.
        count('unknown', error.outcome);
        logger.warn(
          { requestId: res.requestId, code: error.code, sourceAddress: options.clientAddress(req) },
          'notification refused',
        );
      }
      next(error);
    }
  };
}
