import ipaddr from 'ipaddr.js';

/**
 * How many failed token checks the admin port takes before it stops checking a source's tokens (pure). Failures
 * are counted per source address and minute in the database (queries/signInFailures.ts), so every replica
 * throttles alike. Past a source's limit that source gets 429 without its token being checked. Past the total (a
 * guesser with many addresses), every source that has failed this minute does too, until the minute ends, while a
 * source that has not failed is checked as ever: a flood from many addresses (or IPv6 /64s) never shuts out the
 * right token from a clean one, and leaves the guesser one try per address a minute. Sessions already open are
 * not affected.
 */

export interface SignInLimits {
  /** Failed sign-ins one source may make in a minute. */
  perSource: number;
  /** Failed sign-ins all sources together may make in a minute, across every replica. */
  total: number;
}

/**
 * Ten tries a minute are plenty for a person; past a hundred in all, a guesser gets one try a minute per address
 * (per /64) it holds, and a person who mistypes once waits for the minute's end.
 */
export const SIGN_IN_LIMITS: SignInLimits = { perSource: 10, total: 100 };

/** The key a source is counted under: an IPv4 address, or an IPv6 one's /64 (one host usually holds a whole /64). */
export function throttleSource(address: string): string {
  if (!ipaddr.IPv6.isValid(address) || ipaddr.IPv4.isValid(address)) return address;
  const parts = ipaddr.IPv6.parse(address).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** Whether a token is checked, or the attempt throttled (and by which limit). */
export type SignInVerdict = 'check' | 'source_limit' | 'total_limit';

/** This minute's failures, before the attempt being judged: its source's and every source's together. */
export interface MinuteFailures {
  source: number;
  total: number;
}

export function signInVerdict(failures: MinuteFailures, limits: SignInLimits = SIGN_IN_LIMITS): SignInVerdict {
  if (failures.source >= limits.perSource) return 'source_limit';
  if (failures.total >= limits.total && failures.source > 0) return 'total_limit';
  return 'check';
}

/** Why a source is throttled, true of that source: what its 429 says (before when it may retry). */
export function throttleReason(
  verdict: Exclude<SignInVerdict, 'check'>,
  failures: MinuteFailures,
  limits: SignInLimits = SIGN_IN_LIMITS,
): string {
  return verdict === 'source_limit'
    ? `${failures.source} failed tokens from this address this minute (${limits.perSource} are allowed)`
    : `${failures.total} failed tokens this minute from all addresses (${limits.total} are allowed), ` +
        `${failures.source} of them from this one`;
}

/** The start of the minute a time falls in: failures are counted per such minute. */
export const minuteOf = (ms: number): Date => new Date(Math.floor(ms / 60_000) * 60_000);

/** Seconds until the minute a time falls in ends: what Retry-After says. */
export const secondsLeftInMinute = (ms: number): number => Math.max(1, Math.ceil((60_000 - (ms % 60_000)) / 1000));
