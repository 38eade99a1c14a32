import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The sender posts `application/json;charset=UTF-8` (spec, "Events" delivery rule 6). Any JSON
 * media type is accepted; a charset other than UTF-8 is not, since the body is read as UTF-8.
 */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const [mediaType = '', ...parameters] = header.split(';').map((part) => part.trim().toLowerCase());
  const json = mediaType === 'application/json' || /^[a-z0-9!#$&^_.-]+\/[a-z0-9!#$&^_.-]+\+json$/.test(mediaType);
  if (!json) return false;
  const charset = parameters
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  return charset === undefined || charset === 'utf-8' || charset === 'utf8';
}

/** A Content-Length above the limit is refused before a byte of the body is read. */
export function declaredLengthExceeds(header: string | undefined, limit: number): boolean {
  if (header === undefined) return false;
  const length = Number(header);
  return Number.isFinite(length) && length > limit;
}

/** The Basic auth the receiver expects (NOTIFY_BASIC_AUTH) and the simulator sends. */
export interface BasicCredentials {
  user: string;
  password: string;
}

/**
 * `user:password`, as NOTIFY_BASIC_AUTH and `simulate --basic-auth` take it: the user is what comes before
 * the first colon and may not be empty; the password is the rest, colons included. Null when not of that form.
 */
export function parseBasicCredentials(value: string): BasicCredentials | null {
  const colon = value.indexOf(':');
  if (colon <= 0) return null;
  return { user: value.slice(0, colon), password: value.slice(colon + 1) };
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * `Authorization: Basic <base64(user:password)>` (spec, "Authentication" item 8), compared in
 * constant time over digests so neither length nor content leaks through timing.
 */
export function basicAuthMatches(header: string | undefined, expected: BasicCredentials): boolean {
  if (header === undefined) return false;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return false;
  const presented = Buffer.from(match[1], 'base64').toString('utf8');
  return timingSafeEqual(digest(presented), digest(`${expected.user}:${expected.password}`));
}

/** Svc-Processing-Time: milliseconds, when present and sane. */
export function readProcessingTime(header: string | undefined): number | null {
  if (header === undefined || !/^\s*\d{1,9}\s*$/.test(header)) return null;
  return Number(header);
}
