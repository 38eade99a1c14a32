import type { ServerResponse } from 'node:http';
import { RequestError, type ErrorCode } from '../errors';
import type { Logger } from '../observability/logger';

/** A JSON answer written with Node's own response API, so it serves Express's responses and plain ones alike. */
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

/** `{"error":{"code","message"}}`: a stable code for machines, a message for people (never a key, signature or body). */
export function sendError(
  res: ServerResponse,
  status: number,
  code: ErrorCode,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

/**
 * The edge of both ports: an expected failure (RequestError) becomes its documented answer; anything else
 * is logged once, here, with `context` naming the request, and answered 500.
 */
export function answerError(
  error: unknown,
  res: ServerResponse,
  logger: Logger,
  context: Record<string, unknown>,
): void {
  if (error instanceof RequestError) {
    sendError(res, error.status, error.code, error.message, error.headers);
    return;
  }
  logger.error({ err: error, ...context }, 'unexpected error');
  sendError(res, 500, 'internal_error', 'unexpected error; retry later');
}
