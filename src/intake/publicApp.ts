import { IncomingMessage, ServerResponse, type RequestListener } from 'node:http';
import express, { type NextFunction, type RequestHandler } from 'express';
import type { Config } from '../config';
import { answerError, notFound, requestIdOf, sendError } from '../http/errors';
import type { Metrics } from '../observability/metrics';
import { receiveNotification, type IntakeOptions } from './receiveNotification';
import { clientAddressResolver } from './sourceAddress';

/**
 * The public port's response: Node's own, plus what the edge keeps per request. The server makes
 * it (`http.createServer({ ServerResponse: PublicResponse })`), so nothing is attached afterwards.
 */
export class PublicResponse extends ServerResponse<IncomingMessage> {
  readonly startedAt = performance.now();
  requestId = '';
  /** The route template that answered (the duration metric's label); none: unmatched. */
  route = 'unmatched';
}

/** A handler on the public port: Node's request and response, Express's `next`. */
export type PublicHandler = (req: IncomingMessage, res: PublicResponse, next: NextFunction) => void | Promise<void>;

/**
 * A route's handler, which also names the route on the response for the duration metric. The
 * public router runs without an Express application, so its handlers get Node's objects untouched
 * (no Express prototypes); this is the one place that tells the type checker so.
 */
function route(path: string, handler: PublicHandler): RequestHandler {
  const named: PublicHandler = (req, res, next) => {
    res.route = path;
    return handler(req, res, next);
  };
  return named as unknown as RequestHandler;
}

/**
 * The public port: only POST /notifications (the notifyUrl), routed by Express's Router.
 *
 * Not an Express application on purpose: the application layer re-parents every request and
 * response onto its own prototypes, which cost about 135 µs per request here, more than the
 * router, the signature check and the body read together (docs/PERFORMANCE.md). The router keeps
 * Express's matching (case-insensitive, trailing slash, query strings) and error chain.
 */
export function createPublicListener(
  options: IntakeOptions & { trustProxy: Config['trustProxy'] },
): RequestListener<typeof IncomingMessage, typeof PublicResponse> {
  const { metrics, logger } = options;
  const router = express.Router();
  const path = '/notifications';
  router.post(
    path,
    route(path, receiveNotification({ ...options, clientAddress: clientAddressResolver(options.trustProxy) })),
  );
  router.all(
    path,
    route(path, (_req, res) => sendError(res, 405, 'method_not_allowed', 'only POST is accepted', { Allow: 'POST' })),
  );
  const dispatch = router as unknown as (
    req: IncomingMessage,
    res: PublicResponse,
    done: (error?: unknown) => void,
  ) => void;

  return (req, res) => {
    res.requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', res.requestId);
    res.once('finish', () => observe(metrics, req, res));
    dispatch(req, res, (error) => {
      if (error === undefined || error === null) notFound(req, res);
      else answerError(error, res, logger, () => ({ requestId: res.requestId, method: req.method }));
    });
  };
}

/** Request duration by route template (never the raw path: unbounded labels). */
function observe(metrics: Metrics, req: IncomingMessage, res: PublicResponse): void {
  metrics.requestDuration.observe(
    { server: 'public', method: req.method ?? '', route: res.route, status_code: String(res.statusCode) },
    (performance.now() - res.startedAt) / 1000,
  );
}
