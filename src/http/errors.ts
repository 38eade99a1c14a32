import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { RequestError } from '../errors';
import type { Logger } from '../observability/logger';

/** A JSON answer written with Node's own response API, so it serves Express and plain responses alike. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent) return;
  const payload = Buffer.from(JSON.stringify(body));
  res
    .writeHead(status, {
      ...headers,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': payload.length,
    })
    .end(payload);
}

export function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

/** A request id for log correlation: the ingress's X-Request-Id when it looks sane, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
}

/** Express middleware: the request id in res.locals and in the X-Request-Id answer header. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = requestIdOf(req);
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
}

export function notFound(_req: IncomingMessage, res: ServerResponse): void {
  sendError(res, 404, 'not_found', 'no such route');
}

/**
 * The edge: expected failures become their documented answer; anything else is logged once, here.
 * `context` names the request in that log line.
 */
export function answerError(
  error: unknown,
  res: ServerResponse,
  logger: Logger,
  context: () => Record<string, unknown>,
): void {
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
  logger.error({ err: error, ...context() }, 'unexpected error');
  sendError(res, 500, 'internal_error', 'unexpected error; the notification was not recorded, retry later');
}

/** Express error middleware around answerError. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    answerError(error, res, logger, () => ({
      requestId: res.locals.requestId,
      method: req.method,
      route: req.route?.path,
    }));
  };
}
