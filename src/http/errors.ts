import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { RequestError } from '../errors';
import type { Logger } from '../observability/logger';

export function sendError(res: Response, status: number, code: string, message: string, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent) return;
  res.status(status).set(headers).json({ error: { code, message } });
}

/** A request id for log correlation: the ingress's X-Request-Id when it looks sane, else a new one. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
}

export function notFound(_req: Request, res: Response): void {
  sendError(res, 404, 'not_found', 'no such route');
}

/** The edge: expected failures become their documented answer; anything else is logged once, here. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    if (error instanceof RequestError) {
      sendError(res, error.status, error.code, error.message, error.headers);
      return;
    }
    // Errors thrown by Express's own body and query handling carry a status; treat as the client's.
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      sendError(res, status, 'bad_request', 'the request could not be read');
      return;
    }
    logger.error({ err: error, requestId: res.locals.requestId, method: req.method, route: req.route?.path }, 'unexpected error');
    sendError(res, 500, 'internal_error', 'unexpected error; the notification was not recorded, retry later');
  };
}
