import type { Counter } from 'prom-client';
import type { Db } from '../database/pool';
import type { AuditVia } from '../database/schema';
import { recordRepeat } from '../history/auditQueries';
import { addFailure, failuresThisMinute } from './queries/signInFailures';
import type { ConsoleToken } from './session';
import {
  EVERY_SOURCE,
  minuteOf,
  secondsLeftInMinute,
  signInVerdict,
  SIGN_IN_LIMITS,
  throttleSource,
  type SignInLimits,
} from './signInThrottle';

/**
 * What every token check of the admin port goes through, the console's sign-in form and the JSON API's bearer
 * token alike (ADMIN_TOKEN signs in to both): the throttle before the check (signInThrottle.ts, counted in the
 * database for every replica), then the failure or success recorded. The trail gets one row per source and minute
 * for refused and for throttled attempts, and one per name and hour for sign-ins, each with its count; the metric
 * admin_sign_ins_total counts every one.
 */
export interface SignInGuard {
  /** Before any token is checked: go on, or answer 429 for this long (recorded, counted). */
  admit(source: string, via: AuditVia): Promise<{ throttled: false } | { throttled: true; retryAfterSeconds: number }>;
  /** A token that matched no one, or a form that held none that could be checked. */
  refused(source: string, via: AuditVia, detail: string): Promise<void>;
  /** A token that signed its holder in (the console's form). */
  signedIn(holder: ConsoleToken, source: string): Promise<void>;
}

export interface SignInGuardOptions {
  db: Db;
  now: () => Date;
  signIns: Counter<'result' | 'via'>;
  limits?: SignInLimits;
}

/** The hour a time falls in, as a key: sign-ins of one name are one row an hour. */
const hourOf = (at: Date): string => at.toISOString().slice(0, 13);
const minuteKey = (at: Date): string => at.toISOString().slice(0, 16);

export function createSignInGuard({ db, now, signIns, limits = SIGN_IN_LIMITS }: SignInGuardOptions): SignInGuard {
  return {
    async admit(source, via) {
      const at = now();
      const minute = minuteOf(at.getTime());
      const key = throttleSource(source);
      const verdict = signInVerdict(await failuresThisMinute(db, minute, key), limits);
      if (verdict === 'check') return { throttled: false };
      signIns.inc({ result: 'throttled', via });
      const who = verdict === 'total_limit' ? EVERY_SOURCE : key;
      await recordRepeat(
        db,
        {
          actor: '(unknown)',
          role: null,
          action: 'sign_in',
          target: verdict === 'total_limit' ? 'every source' : key,
          result: 'throttled',
          detail:
            verdict === 'total_limit'
              ? `over ${limits.total} failed sign-ins this minute from all sources: answered 429, no token checked`
              : `over ${limits.perSource} failed sign-ins this minute from this source: answered 429, no token checked`,
          via,
          sourceAddress: verdict === 'total_limit' ? null : source,
        },
        `sign_in_throttled:${via}:${who}:${minuteKey(minute)}`,
        at,
      );
      return { throttled: true, retryAfterSeconds: secondsLeftInMinute(at.getTime()) };
    },

    async refused(source, via, detail) {
      const at = now();
      const minute = minuteOf(at.getTime());
      const key = throttleSource(source);
      signIns.inc({ result: 'refused', via });
      await addFailure(db, minute, key);
      await recordRepeat(
        db,
        {
          actor: '(unknown)',
          role: null,
          action: 'sign_in',
          target: key,
          result: 'refused',
          detail,
          via,
          sourceAddress: source,
        },
        `sign_in_refused:${via}:${key}:${minuteKey(minute)}`,
        at,
      );
    },

    async signedIn(holder, source) {
      const at = now();
      signIns.inc({ result: 'signed_in', via: 'console' });
      await recordRepeat(
        db,
        { actor: holder.name, role: holder.role, action: 'sign_in', result: 'signed_in', sourceAddress: source },
        `sign_in:${holder.role}:${holder.name}:${hourOf(at)}`,
        at,
      );
    },
  };
}
