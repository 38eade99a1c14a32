import { createHash } from 'node:crypto';

/** The algorithms the payment service signs with: MD5 usually, SHA-256 on newer POS. */
export const SIMULATOR_ALGORITHMS = ['MD5', 'SHA-1', 'SHA-256', 'SHA-384', 'SHA-512'] as const;
export type SimulatorAlgorithm = (typeof SIMULATOR_ALGORITHMS)[number];

/** Which signature header(s) to send: the real sender sends both spellings with the same value. */
export type SignatureHeaders = 'both' | 'OpenSvc-Signature' | 'X-OpenSvc-Signature';

/** Accepts md5, MD5, sha256, SHA-256 and the like; null when it is none of SIMULATOR_ALGORITHMS. */
export function parseSimulatorAlgorithm(value: string): SimulatorAlgorithm | null {
  const normalized = value.trim().toUpperCase().replace(/-/g, '');
  return SIMULATOR_ALGORITHMS.find((a) => a.replace(/-/g, '') === normalized) ?? null;
}

/**
 * The OpenSvc-Signature header value for a body (spec, "Authentication" item 7):
 * `sender=checkout;signature=hex(hash(body bytes + second key));algorithm=...;content=DOCUMENT`.
 */
export function signNotification(
  body: Buffer,
  secondKey: string | Buffer,
  algorithm: SimulatorAlgorithm = 'MD5',
): string {
  const signature = createHash(algorithm.toLowerCase().replace(/-/g, '')).update(body).update(secondKey).digest('hex');
  return `sender=checkout;signature=${signature};algorithm=${algorithm};content=DOCUMENT`;
}

export interface HeaderOptions {
  secondKey: string | Buffer;
  algorithm: SimulatorAlgorithm;
  signatureHeaders: SignatureHeaders;
  /** Sent as `Authorization: Basic` when set (spec, "Authentication" item 8). */
  basicAuth?: { user: string; password: string } | null;
  /** Svc-Processing-Time, when the sender reports one for this status. */
  processingTimeMs?: number | null;
}

/** The request headers of one notification, as the payment service sends them. */
export function notificationHeaders(body: Buffer, options: HeaderOptions): Record<string, string> {
  const signature = signNotification(body, options.secondKey, options.algorithm);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json;charset=UTF-8',
    'User-Agent': 'Jakarta Commons-HttpClient/3.1',
  };
  if (options.signatureHeaders !== 'X-OpenSvc-Signature') headers['OpenSvc-Signature'] = signature;
  if (options.signatureHeaders !== 'OpenSvc-Signature') headers['X-OpenSvc-Signature'] = signature;
  if (options.processingTimeMs !== undefined && options.processingTimeMs !== null) {
    headers['Svc-Processing-Time'] = String(options.processingTimeMs);
  }
  if (options.basicAuth) {
    headers.Authorization = `Basic ${Buffer.from(`${options.basicAuth.user}:${options.basicAuth.password}`, 'utf8').toString('base64')}`;
  }
  return headers;
}
