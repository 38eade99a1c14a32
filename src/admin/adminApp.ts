import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { sql } from 'kysely';
import { isDatabaseUnavailable } from '../database/errors';
import type { Db } from '../database/pool';
import { RequestError } from '../errors';
import { answerError, sendError } from '../http/answers';
import { beginRequest } from '../http/requestContext';
import type { Logger } from '../observability/logger';
import type { ProcessMetrics } from '../observability/metrics';
import type { OrderCheck } from '../reconciliation/checkOrder';
import type { PosProblem, Reconciliation } from '../reconciliation/reconciliation';
import { findOrder, findRefund, type OrderView } from './projectionQueries';

/** The admin port's data routes: their own small pool, a cap on requests at once, and an optional token. */
export interface AdminData {
  db: Db;
  /** Bearer token the data routes require (ADMIN_TOKEN); null: open. */
  token: string | null;
  /** Data requests served at once (ADMIN_CONCURRENCY); past it, 503. */
  concurrency: number;
}

export interface AdminOptions {
  /** Readiness asks this database (the recorder's pool): can notifications be recorded? */
  probeDb: Db;
  /** The data routes (/orders, /refunds); null where the process serves none (the relay alone). */
  data: AdminData | null;
  /** On-demand checks against the payment API (POST /orders/{orderId}/reconcile); null: off. */
  reconciliation?: Reconciliation | null;
  metrics: ProcessMetrics;
  logger: Logger;
  /** False once shutdown began: readiness fails first so the load balancer stops sending. */
  isAccepting: () => boolean;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * What guards the data routes, so that reading projections can never starve the intake: a bearer token
 * when one is configured (compared in constant time), and a cap on requests at once, past which the
 * answer is 503 at once rather than a queue on the database.
 */
function dataGate({ token, concurrency }: AdminData) {
  const expected = token === null ? null : digest(token);
  let inFlight = 0;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (expected) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
        return sendError(res, 401, 'unauthorized', 'a valid admin bearer token is required', {
          'WWW-Authenticate': 'Bearer realm="admin"',
        });
      }
    }
    if (inFlight >= concurrency) {
      return sendError(res, 503, 'admin_busy', 'too many admin requests at once; retry later', { 'Retry-After': '1' });
    }
    inFlight += 1;
    res.once('close', () => (inFlight -= 1));
    next();
  };
}

/** What POST /orders/{orderId}/reconcile answers: the check, and the projection after it. */
type ReconcileAnswer = Omit<OrderCheck, 'final' | 'retryAfterMs'> & { order: OrderView | null };

const POS_PROBLEMS: Record<PosProblem, RequestError> = {
  pos_required: new RequestError(
    400,
    'pos_required',
    'nothing is recorded for this order and several POS are configured: give {"posId": "..."}',
  ),
  unknown_pos: new RequestError(400, 'unknown_pos', 'no payment API credentials are configured for that posId'),
  pos_mismatch: new RequestError(409, 'pos_mismatch', 'the order belongs to another POS than the posId given'),
};

/** The optional body's posId: `{"posId": "..."}`, or nothing. */
function requestedPosId(body: unknown): string | undefined {
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0))
    return undefined;
  const posId = typeof body === 'object' && 'posId' in body ? body.posId : undefined;
  if (typeof posId !== 'string' || posId === '' || posId.length > 64)
    throw new RequestError(400, 'bad_request', 'the body is optional; when given, it is {"posId": "<a POS id>"}');
  return posId;
}

/** The admin port: probes and metrics (open to the kubelet and Prometheus), and the projections. Never routed publicly. */
export function createAdminApp({
  probeDb,
  data,
  reconciliation = null,
  metrics,
  logger,
  isAccepting,
}: AdminOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    res.locals.requestId = beginRequest(req, res, metrics, 'admin', () => {
      const route = (req.route as { path?: string } | undefined)?.path;
      return typeof route === 'string' ? route : 'unmatched';
    });
    next();
  });

  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // Liveness: the event loop answers. Never depends on the database, or a database outage would restart
  // every pod at once.
  app.get('/livez', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Readiness: accepting, and the database answers. The broker is not checked on purpose: with it down,
  // notifications are still accepted and events wait in the outbox.
  app.get('/readyz', async (_req, res) => {
    if (!isAccepting()) return sendError(res, 503, 'shutting_down', 'the service is shutting down');
    try {
      await sql`SELECT 1`.execute(probeDb);
      res.json({ status: 'ready' });
    } catch {
      sendError(res, 503, 'database_unavailable', 'the database does not answer');
    }
  });

  if (data) {
    const gate = dataGate(data);
    app.get('/orders/:orderId', gate, async (req, res) => {
      const order = await findOrder(data.db, req.params.orderId as string);
      if (!order) throw new RequestError(404, 'order_not_found', 'no notification has been recorded for this order');
      res.json(order);
    });

    app.post('/orders/:orderId/reconcile', gate, express.json({ limit: 1024, strict: true }), async (req, res) => {
      const orderId = req.params.orderId as string;
      if (!reconciliation)
        throw new RequestError(409, 'reconciliation_off', 'reconciliation is off: PAYMENT_API_URL is not set');
      const checked = await reconciliation.reconcileOrder(orderId, requestedPosId(req.body));
      if ('problem' in checked) throw POS_PROBLEMS[checked.problem];
      if (checked.result === 'unavailable')
        throw new RequestError(503, 'payment_api_unavailable', 'the payment API does not answer; retry later', null, {
          'Retry-After': String(Math.max(1, Math.ceil((checked.retryAfterMs ?? 5000) / 1000))),
        });
      const order = await findOrder(data.db, orderId);
      if (!order && checked.result === 'not_found')
        throw new RequestError(404, 'order_not_found', 'neither this service nor the payment API knows this order');
      const { result, posId, said, applied, stale, conflicts } = checked;
      const answer: ReconcileAnswer = { orderId, posId, result, said, applied, stale, conflicts, order };
      res.json(answer);
    });

    app.get('/refunds/:refundId', gate, async (req, res) => {
      const refund = await findRefund(data.db, req.params.refundId as string);
      if (!refund) throw new RequestError(404, 'refund_not_found', 'no notification has been recorded for this refund');
      res.json(refund);
    });
  }

  app.use((_req: Request, res: Response) => sendError(res, 404, 'not_found', 'no such route'));
  // Express's own errors (a malformed path, say) carry a 4xx status: the client's, not ours. A database
  // that does not answer is a 503 to retry, not a defect.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = (error as { status?: unknown }).status;
    const clientError = !(error instanceof RequestError) && typeof status === 'number' && status >= 400 && status < 500;
    const expected = clientError
      ? new RequestError(status, 'bad_request', 'the request could not be read')
      : isDatabaseUnavailable(error)
        ? new RequestError(503, 'database_unavailable', 'the database does not answer; retry later', null, {
            'Retry-After': '5',
          })
        : error;
    answerError(expected, res, logger, { requestId: res.locals.requestId as string, method: req.method });
  });
  return app;
}
