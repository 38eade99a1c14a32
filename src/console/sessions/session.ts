import { createHash, randomBytes } from 'node:crypto';
import { settingEntries } from '../../parsing/settingList';

/**
 * Who may use the console and how a session is carried (pure). A person signs in with a token once; the
 * console then keeps a session in the database (queries/sessions.ts) and gives the browser only its random id,
 * in a `__Host-` cookie. The token itself never leaves the sign-in form; the database holds the id's SHA-256
 * and a fingerprint of the token, never either of them.
 */

export type ConsoleRole = 'viewer' | 'operator';

/** A named token: the name is what the audit trail records. */
export interface ConsoleToken {
  name: string;
  token: string;
  role: ConsoleRole;
}

export const NAME = /^[A-Za-z0-9_@-]{1,64}$/;

/**
 * Names no person (nor team) may take: `admin` is ADMIN_TOKEN's holder and `local` the caller of an open loopback
 * port, so that the audit trail can tell who acted.
 */
export const RESERVED_NAMES: readonly string[] = ['admin', 'local'];

/**
 * `name:token` entries, comma-separated (CONSOLE_OPERATOR_TOKENS, CONSOLE_VIEWER_TOKENS): a name of letters,
 * digits and `_@-`, a token of at least 16 characters. Problems name the entry by its number, never its token.
 */
export function parseConsoleTokens(value: string, role: ConsoleRole): { tokens: ConsoleToken[]; problems: string[] } {
  const { entries, problems } = settingEntries(value);
  const tokens: ConsoleToken[] = [];
  for (const { text, number } of entries) {
    const colon = text.indexOf(':');
    const name = colon === -1 ? '' : text.slice(0, colon);
    const token = colon === -1 ? '' : text.slice(colon + 1);
    if (!NAME.test(name)) problems.push(`entry ${number}: must be name:token, the name of letters, digits and _@-`);
    else if (RESERVED_NAMES.includes(name))
      problems.push(
        `entry ${number} (${name}): the name is reserved (admin is ADMIN_TOKEN's holder, local the caller of an ` +
          'open loopback port); choose another',
      );
    else if (token.length < 16) problems.push(`entry ${number} (${name}): the token must be at least 16 characters`);
    else if (tokens.some((t) => t.name === name)) problems.push(`entry ${number} (${name}): the name is used twice`);
    else tokens.push({ name, token, role });
  }
  return { tokens, problems };
}

/**
 * Which token a session was opened with, as the database keeps it: 64 bits of a hash, enough to tell a replaced
 * token from the one that signed in, too few to check guesses of a token against.
 */
export const tokenFingerprint = (token: string): string =>
  createHash('sha256').update(`console-token\0${token}`).digest('hex').slice(0, 16);

/** The cookie that carries a session's id: `__Host-` (Secure, Path=/, no Domain), so no other site can set it. */
export const SESSION_COOKIE = '__Host-console_session';

/**
 * Secure always: browsers keep Secure cookies from http://localhost and 127.0.0.1 (a port-forward), and
 * anywhere else the console must be reached over TLS, so a cookie never travels in clear.
 */
export const SESSION_COOKIE_ATTRIBUTES = 'Path=/; HttpOnly; Secure; SameSite=Strict';

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

const keyOf = (id: string): Buffer => createHash('sha256').update(id).digest();

/** A new session: its id for the cookie (32 random bytes, base64url) and the key the database holds it by. */
export function newSession(): { id: string; key: Buffer } {
  const id = randomBytes(32).toString('base64url');
  return { id, key: keyOf(id) };
}

/** What the database keys a cookie's session by; null when the value cannot be a session id (never looked up). */
export function sessionKey(value: string): Buffer | null {
  return SESSION_ID.test(value) ? keyOf(value) : null;
}

/**
 * The session cookie's values in a Cookie header: none, one, or several (a cookie planted beside ours, or a
 * stale duplicate), which the console refuses rather than choosing one.
 */
export function sessionCookies(header: string | undefined): string[] {
  const values: string[] = [];
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

/** A session as the database holds it. */
export interface StoredSession {
  name: string;
  role: ConsoleRole;
  tokenFingerprint: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** last_seen_at is written at most this often per session: the idle timeout is that much coarser. */
export const TOUCH_EVERY_MS = 60_000;

/** Why a stored session no longer lets its holder in. */
export type SessionEnd = 'expired' | 'idle' | 'access_changed';

/**
 * Whether a stored session still stands (and whether its last_seen_at is due a write), judged against the
 * configuration as it is now: the name must still hold a token of the same role, the very one that signed in.
 */
export function judgeSession(
  session: StoredSession,
  holders: ReadonlyMap<string, { role: ConsoleRole; fingerprint: string }>,
  nowMs: number,
  idleMs: number,
): { stands: true; touch: boolean } | { stands: false; end: SessionEnd } {
  const holder = holders.get(session.name);
  if (holder === undefined || holder.role !== session.role || holder.fingerprint !== session.tokenFingerprint)
    return { stands: false, end: 'access_changed' };
  if (session.expiresAt.getTime() <= nowMs) return { stands: false, end: 'expired' };
  if (nowMs - session.lastSeenAt.getTime() > idleMs) return { stands: false, end: 'idle' };
  return { stands: true, touch: nowMs - session.lastSeenAt.getTime() >= TOUCH_EVERY_MS };
}

/** The configured people by name, with their tokens' fingerprints: what judgeSession compares with. */
export function holdersByName(
  tokens: readonly ConsoleToken[],
): ReadonlyMap<string, { role: ConsoleRole; fingerprint: string }> {
  return new Map(tokens.map((t) => [t.name, { role: t.role, fingerprint: tokenFingerprint(t.token) }]));
}
