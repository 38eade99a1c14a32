import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { settingEntries } from '../parsing/settingList';

/**
 * Who may use the console and how a session is carried (pure). A person signs in with a token once; the
 * console then keeps a signed cookie naming them, their role and its expiry. The token itself never leaves the
 * sign-in form.
 */

export type ConsoleRole = 'viewer' | 'operator';

/** A named token: the name is what the audit trail records. */
export interface ConsoleToken {
  name: string;
  token: string;
  role: ConsoleRole;
}

const NAME = /^[A-Za-z0-9_@-]{1,64}$/;

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
    else if (token.length < 16) problems.push(`entry ${number} (${name}): the token must be at least 16 characters`);
    else if (tokens.some((t) => t.name === name)) problems.push(`entry ${number} (${name}): the name is used twice`);
    else tokens.push({ name, token, role });
  }
  return { tokens, problems };
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The token's holder, compared in constant time against every configured token; null: none matches. */
export function tokenHolder(tokens: readonly ConsoleToken[], presented: string): ConsoleToken | null {
  const given = digest(presented);
  let found: ConsoleToken | null = null;
  for (const candidate of tokens)
    if (timingSafeEqual(digest(candidate.token), given) && found === null) found = candidate;
  return found;
}

/** A signed-in person, as the cookie carries them. */
export interface Session {
  name: string;
  role: ConsoleRole;
  /** Seconds since the epoch. */
  expiresAt: number;
}

const sign = (secret: Buffer, payload: string): string =>
  createHmac('sha256', secret).update(payload).digest('base64url');

/** `v1.<name>.<role>.<expires>.<hmac>`: the name's alphabet has no dot, so the fields split unambiguously. */
export function sealSession(secret: Buffer, session: Session): string {
  const payload = `v1.${session.name}.${session.role}.${session.expiresAt}`;
  return `${payload}.${sign(secret, payload)}`;
}

/** The session a cookie value carries, or why not: forged (bad form or signature) or expired. */
export function openSession(
  secret: Buffer,
  value: string,
  nowSeconds: number,
): { session: Session } | { problem: 'forged' | 'expired' } {
  const match = /^v1\.([A-Za-z0-9_@-]{1,64})\.(viewer|operator)\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return { problem: 'forged' };
  const [, name = '', role = '', expires = '', mac = ''] = match;
  const expected = Buffer.from(sign(secret, `v1.${name}.${role}.${expires}`));
  if (!timingSafeEqual(expected, Buffer.from(mac))) return { problem: 'forged' };
  if (Number(expires) <= nowSeconds) return { problem: 'expired' };
  return { session: { name, role: role === 'operator' ? 'operator' : 'viewer', expiresAt: Number(expires) } };
}
