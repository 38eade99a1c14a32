import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProcessMetrics } from '../observability/metrics';

/** A request id for log correlation: the ingress's X-Request-Id when it looks sane, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
}

/**
 * What every request on either port gets first: its id, in the X-Request-Id answer header, and its
 * duration observed when the answer is sent, labelled with the route template that answered (`routeOf`,
 * read then; never the raw path: unbounded labels).
 */
export function beginRequest(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: ProcessMetrics,
  server: 'public' | 'admin',
  routeOf: () => string,
): string {
  const requestId = requestIdOf(req);
  res.setHeader('X-Request-Id', requestId);
  const started = performance.now();
  res.once('finish', () =>
    metrics.requestDuration.observe(
      { server, method: req.method ?? '', route: routeOf(), status_code: String(res.statusCode) },
      (performance.now() - started) / 1000,
    ),
  );
  return requestId;
}
