import type http from 'node:http';

/**
 * The double's side of the wire: which endpoint a request asks for, and the spec's answers it writes (errors,
 * and the endless answer a fault asks for).
 */

export type Json = { [key: string]: unknown };

export const isJson = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function endpointOf(
  method: string,
  path: string,
): { name: 'token' } | { name: 'order' | 'refunds'; orderId: string } | null {
  // The sandbox sample also uses /pl/standard/oauth/authorize (spec, "Endpoints" 1).
  if (method === 'POST' && (path === '/pl/standard/user/oauth/authorize' || path === '/pl/standard/oauth/authorize'))
    return { name: 'token' };
  const match = /^\/api\/v2_1\/orders\/([^/]+)(\/refunds)?$/.exec(path);
  if (method !== 'GET' || !match) return null;
  const orderId = decodeURIComponent(match[1] as string);
  return match[2] ? { name: 'refunds', orderId } : { name: 'order', orderId };
}

/** A 200 of `bytes` spaces (Infinity: endless), written as the client reads, until it is done or the client leaves. */
export async function sendHuge(res: http.ServerResponse, bytes: number, declared: boolean): Promise<void> {
  res.writeHead(200, {
    'content-type': 'application/json;charset=UTF-8',
    ...(declared && Number.isFinite(bytes) ? { 'content-length': String(bytes) } : {}),
  });
  const closed = new Promise<void>((resolve) => res.once('close', resolve));
  const chunk = Buffer.alloc(64 * 1024, ' ');
  for (let sent = 0; sent < bytes && !res.destroyed; sent += chunk.length) {
    const part = bytes - sent < chunk.length ? chunk.subarray(0, bytes - sent) : chunk;
    if (!res.write(part)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), closed]);
  }
  if (!res.destroyed) res.end();
}

export function status(statusCode: string, statusDesc: string): Json {
  return { status: { statusCode, statusDesc } };
}

/** The spec's error bodies for the statuses a fault asks for (spec, "Errors", "Status codes"). */
export function errorBody(httpStatus: number): Json {
  if (httpStatus === 429) return status('TOO_MANY_REQUESTS', 'Too many requests');
  if (httpStatus === 503) return status('SERVICE_NOT_AVAILABLE', 'Unavailable; retry later');
  if (httpStatus === 408) return status('TIMEOUT', 'Processing time expired');
  if (httpStatus >= 500) return status('GENERAL_ERROR', 'Unexpected error; retry later');
  return status('ERROR_VALUE_INVALID', 'Injected fault');
}
