import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { isDatabaseUnavailable } from '../database/errors';
import { ping, type Db } from '../database/pool';
import { RequestError } from '../errors';
import { answerError, sendError } from '../http/answers';
import { beginRequest } from '../http/requestContext';
import type { Logger } from '../observability/logger';
import type { ProcessMetrics } from '../observability/metrics';
import { idProblem } from '../parsing/identifiers';
import type { OrderCheck } from '../reconciliation/checkOrder';
import type { PosProblem, Reconciliation } from '../reconciliation/reconciliation';
import { createConsole, type ConsoleOptions } from '../console/consoleApp';
import { registerEventRoutes } from './eventRoutes';
import { orderView, refundView, type OrderView } from './orderViews';

/** The admin port's data routes: their own small pool, a cap on work at once, and an optional token. */
export interface AdminData {
  db: Db;
  /** Bearer token the data routes require (ADMIN_TOKEN); null: open. */
  token: string | null;
  /** Data requests worked on at once (ADMIN_CONCURRENCY); past it, 503. */
  concurrency: number;
  /** The broker POST /events/replay publishes to (AMQP_URL); null: replays are refused. */
  amqpUrl?: string | null;
  /** The console under /console (src/console/); null: none. Its pages share the cap above. */
  console?: Omit<ConsoleOptions, 'db' | 'limited' | 'logger' | 'reconciliation'> | null;
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

/** The bearer token when one is configured (compared in constant time); 401 without it. */
function authorize({ token }: AdminData) {
  const expected = token === null ? null : digest(token);
  return (req: Request, res: Response, next: NextFunction): void => {
    if (expected) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
        return sendError(res, 401, 'unauthorized', 'a valid admin bearer token is required', {
          'WWW-Authenticate': 'Bearer realm="admin"',
        });
      }
    }
    next();
  };
}

/**
 * A cap on the data routes' work at once, so that reading projections or asking the payment API can never
 * starve the intake: past it, 503 at once. A place is held until the work ends, not until its client leaves
 * (leaving does not free a place); the work gets a signal that aborts when its client leaves, so it stops.
 */
function workLimit({ concurrency }: AdminData) {
  let working = 0;
  return async <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>): Promise<T> => {
    if (working >= concurrency)
      throw new RequestError(503, 'admin_busy', 'too many admin requests at once; retry later', null, {
        'Retry-After': '1',
      });
    working += 1;
    const left = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) left.abort();
    };
    // Its client may have left already, while the request waited or its body was read.
    if (res.destroyed) left.abort();
    else res.once('close', onClose);
    try {
      return await work(left.signal);
    } finally {
      working -= 1;
      res.off('close', onClose);
    }
  };
}

/** The id of a path, or 400 when it cannot be an order or refund id (idProblem). */
function validId(value: unknown, kind: 'order' | 'refund'): string {
  const id = typeof value === 'string' ? value : '';
  const problem = idProblem(id);
  if (problem !== null) throw new RequestError(400, `invalid_${kind}_id`, `not a valid ${kind} id: ${problem}`);
  return id;
}

/** What POST /orders/{orderId}/reconcile answers: the check, and the projection after it. */
type ReconcileAnswer = Omit<OrderCheck, 'final' | 'retryAfterMs' | 'failure'> & { order: OrderView | null };

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
      if (typeof route !== 'string') return 'unmatched';
      // The console's routes are its router's, under /console.
      return req.originalUrl.startsWith('/console/') || req.originalUrl === '/console' ? `/console${route}` : route;
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
      await ping(probeDb);
      res.json({ status: 'ready' });
    } catch {
      sendError(res, 503, 'database_unavailable', 'the database does not answer');
    }
  });

  if (data) {
    const authorized = authorize(data);
    const limited = workLimit(data);
    if (data.console)
      app.use('/console', createConsole({ ...data.console, db: data.db, limited, logger, reconciliation }));
    app.get('/orders/:orderId', authorized, async (req, res) => {
      const orderId = validId(req.params.orderId, 'order');
      const order = await limited(res, () => orderView(data.db, orderId));
      if (!order) throw new RequestError(404, 'order_not_found', 'no notification has been recorded for this order');
      res.json(order);
    });

    app.post(
      '/orders/:orderId/reconcile',
      authorized,
      express.json({ limit: 1024, strict: true }),
      async (req, res) => {
        const orderId = validId(req.params.orderId, 'order');
        if (!reconciliation)
          throw new RequestError(409, 'reconciliation_off', 'reconciliation is off: PAYMENT_API_URL is not set');
        const posId = requestedPosId(req.body);
        const answer = await limited(res, async (clientLeft) => {
          const checked = await reconciliation.reconcileOrder(orderId, {
            ...(posId === undefined ? {} : { posId }),
            clientLeft,
          });
          if ('problem' in checked) throw POS_PROBLEMS[checked.problem];
          if (checked.result === 'unavailable')
            throw new RequestError(
              503,
              'payment_api_unavailable',
              'the payment API does not answer; retry later',
              null,
              {
                'Retry-After': String(Math.max(1, Math.ceil((checked.retryAfterMs ?? 5000) / 1000))),
              },
            );
          const order = await orderView(data.db, orderId);
          if (!order && checked.result === 'not_found')
            throw new RequestError(404, 'order_not_found', 'neither this service nor the payment API knows this order');
          const { result, posId: askedWith, said, applied, stale, conflicts } = checked;
          return {
            orderId,
            posId: askedWith,
            result,
            said,
            applied,
            stale,
            conflicts,
            order,
          } satisfies ReconcileAnswer;
        });
        res.json(answer);
      },
    );

    registerEventRoutes(app, { db: data.db, amqpUrl: data.amqpUrl ?? null, authorized, limited });

    app.get('/refunds/:refundId', authorized, async (req, res) => {
      const refundId = validId(req.params.refundId, 'refund');
      const refund = await limited(res, () => refundView(data.db, refundId));
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
