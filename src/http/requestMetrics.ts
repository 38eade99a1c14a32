import type { NextFunction, Request, Response } from 'express';
import type { ProcessMetrics } from '../observability/metrics';

/** Observes every request's duration with its route template (never the raw path: unbounded labels). */
export function requestMetrics(metrics: ProcessMetrics, server: 'public' | 'admin') {
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = metrics.requestDuration.startTimer({ server, method: req.method });
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      end({ route: String(route), status_code: String(res.statusCode) });
    });
    next();
  };
}
