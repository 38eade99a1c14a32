import express, { type Express } from 'express';
import { sql } from 'kysely';
import { errorHandler, notFound, requestId, sendError } from '../http/errors';
import { requestMetrics } from '../http/requestMetrics';
import type { Logger } from '../observability/logger';
import type { ProcessMetrics } from '../observability/metrics';
import type { Db } from '../recording/database';
import { findOrder, findRefund } from './projectionQueries';

export interface AdminOptions {
  db: Db;
  metrics: ProcessMetrics;
  logger: Logger;
  /** False once shutdown began: readiness fails first so the load balancer stops sending. */
  isAccepting: () => boolean;
}

/** The admin port: metrics, probes and the projections. Never routed by the public ingress. */
export function createAdminApp({ db, metrics, logger, isAccepting }: AdminOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId);
  app.use(requestMetrics(metrics, 'admin'));

  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // Liveness: the event loop answers. Never depends on the database, or a database outage
  // would restart every pod at once.
  app.get('/livez', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Readiness: accepting, and the database answers. The broker is not checked on purpose: with
  // it down, notifications are still accepted and events wait in the outbox.
  app.get('/readyz', async (_req, res) => {
    if (!isAccepting()) return sendError(res, 503, 'shutting_down', 'the service is shutting down');
    try {
      await sql`SELECT 1`.execute(db);
      res.json({ status: 'ready' });
    } catch {
      sendError(res, 503, 'database_unavailable', 'the database does not answer');
    }
  });

  app.get('/orders/:orderId', async (req, res) => {
    const order = await findOrder(db, req.params.orderId);
    if (!order) return sendError(res, 404, 'order_not_found', 'no notification has been recorded for this order');
    res.json(order);
  });

  app.get('/refunds/:refundId', async (req, res) => {
    const refund = await findRefund(db, req.params.refundId);
    if (!refund) return sendError(res, 404, 'refund_not_found', 'no notification has been recorded for this refund');
    res.json(refund);
  });

  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
