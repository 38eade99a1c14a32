import ipaddr from 'ipaddr.js';

/**
 * How many failed sign-ins the console takes before it stops checking tokens (pure). Failures are counted per
 * source address and minute in the database (queries/signInFailures.ts), so every replica throttles alike.
 * Past a source's limit that source gets 429 without its token being checked, while other sources still sign
 * in; past the total (a guesser with many addresses), everyone does until the minute ends. Sessions already
 * open are not affected.
 */

export interface SignInLimits {
  /** Failed sign-ins one source may make in a minute. */
  perSource: number;
  /** Failed sign-ins all sources together may make in a minute, across every replica. */
  total: number;
}

/** Ten tries a minute are plenty for a person; a hundred in all bound a guesser to 144,000 a day. */
export const SIGN_IN_LIMITS: SignInLimits = { perSource: 10, total: 100 };

/** The key a source is counted under: an IPv4 address, or an IPv6 one's /64 (one host usually holds a whole /64). */
export function throttleSource(address: string): string {
  if (!ipaddr.IPv6.isValid(address) || ipaddr.IPv4.isValid(address)) return address;
  const parts = ipaddr.IPv6.parse(address).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** The source key under which failures past the total are recorded. */
export const EVERY_SOURCE = 'all';

/** Whether a sign-in's token is checked, or the attempt throttled (and by which limit). */
export type SignInVerdict = 'check' | 'source_limit' | 'total_limit';

export function signInVerdict(
  failures: { source: number; total: number },
  limits: SignInLimits = SIGN_IN_LIMITS,
): SignInVerdict {
  if (failures.source >= limits.perSource) return 'source_limit';
  if (failures.total >= limits.total) return 'total_limit';
  return 'check';
}

/** The start of the minute a time falls in: failures are counted per such minute. */
export const minuteOf = (ms: number): Date => new Date(Math.floor(ms / 60_000) * 60_000);

/** Seconds until the minute a time falls in ends: what Retry-After says. */
export const secondsLeftInMinute = (ms: number): number => Math.max(1, Math.ceil((60_000 - (ms % 60_000)) / 1000));
