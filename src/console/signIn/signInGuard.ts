import type { Counter } from 'prom-client';
import { holderOf, type AdminTokens, type TokenHolder } from '../../admin/tokens';
import type { Db } from '../../database/pool';
import type { AuditVia } from '../../database/schema';
import { recordRepeat } from '../../audit/auditQueries';
import { addFailure, failuresThisMinute } from './signInFailureQueries';
import type { ConsoleToken } from '../sessions/session';
import {
  minuteOf,
  secondsLeftInMinute,
  signInVerdict,
  SIGN_IN_LIMITS,
  throttleReason,
  throttleSource,
  type SignInLimits,
} from './signInThrottle';

/**
 * What every token check of the admin port goes through, the console's sign-in form and the JSON API's bearer
 * token alike (ADMIN_TOKEN signs in to both): the throttle before the check (signInThrottle.ts, counted in the
 * database for every replica), then the token compared with every one configured (admin/tokens.ts), then the
 * failure or success recorded. The trail gets one row per source and minute for refused and for throttled
 * attempts, and one per name and hour for sign-ins, each with its count; the metric admin_sign_ins_total counts
 * every one.
 *
 * The throttle's decision and its reading of the database come before the token is looked at and are the same
 * for a right and a wrong one; so is the comparison (every token, in constant time). A source's checks on one
 * replica run one after another, so that each reads the failures of the one before: a guesser cannot pass the
 * limit by sending its tries at once.
 */
export interface SignInGuard {
  /**
   * One token check from `source` through `via`. `read` gives the presented token, or the problem that leaves
   * none to check (a doubled field or header, a malformed one); it is called only once the source is admitted,
   * and what it throws counts as a refusal too, then is thrown on.
   */
  check(source: string, via: AuditVia, read: () => PresentedToken): Promise<TokenCheck>;
  /** A token that signed its holder in (the console's form). */
  signedIn(holder: ConsoleToken, source: string): Promise<void>;
}

export type PresentedToken = { token: string } | { problem: string };

export type TokenCheck =
  /** 429 for this long, no token looked at; `reason` is true of this source (signInThrottle.ts, throttleReason). */
  | { outcome: 'throttled'; retryAfterSeconds: number; reason: string }
  /** No holder: counted against the source and recorded; `problem` says why none was checked, if so. */
  | { outcome: 'refused'; problem: string | null }
  | { outcome: 'admitted'; holder: TokenHolder };

export interface SignInGuardOptions {
  db: Db;
  now: () => Date;
  signIns: Counter<'result' | 'via'>;
  tokens: AdminTokens;
  limits?: SignInLimits;
}

/** The hour a time falls in, as a key: sign-ins of one name are one row an hour. */
const hourOf = (at: Date): string => at.toISOString().slice(0, 13);
const minuteKey = (at: Date): string => at.toISOString().slice(0, 16);

export function createSignInGuard({
  db,
  now,
  signIns,
  tokens,
  limits = SIGN_IN_LIMITS,
}: SignInGuardOptions): SignInGuard {
  /** Each source's latest check on this replica: the next one starts when it ends. */
  const latest = new Map<string, Promise<unknown>>();
  const oneAtATime = <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const before = latest.get(key) ?? Promise.resolve();
    const mine = before.then(work, work);
    const settled = mine.catch(() => undefined);
    latest.set(key, settled);
    void settled.then(() => {
      if (latest.get(key) === settled) latest.delete(key);
    });
    return mine;
  };

  /** A refused or throttled attempt: counted, and on the trail as one row per source, door and minute. */
  const recordAttempt = async (
    result: 'refused' | 'throttled',
    attempt: { source: string; key: string; via: AuditVia; at: Date },
    detail: string,
  ): Promise<void> => {
    const { source, key, via, at } = attempt;
    const minute = minuteOf(at.getTime());
    signIns.inc({ result, via });
    if (result === 'refused') await addFailure(db, minute, key);
    await recordRepeat(
      db,
      { actor: '(unknown)', role: null, action: 'sign_in', target: key, result, detail, via, sourceAddress: source },
      `sign_in_${result}:${via}:${key}:${minuteKey(minute)}`,
      at,
    );
  };

  return {
    check(source, via, read) {
      const key = throttleSource(source);
      return oneAtATime(key, async (): Promise<TokenCheck> => {
        const at = now();
        const minute = minuteOf(at.getTime());
        const failures = await failuresThisMinute(db, minute, key);
        const verdict = signInVerdict(failures, limits);
        const attempt = { source, key, via, at };
        if (verdict !== 'check') {
          const reason = throttleReason(verdict, failures, limits);
          await recordAttempt('throttled', attempt, `${reason}: answered 429, no token checked`);
          return { outcome: 'throttled', retryAfterSeconds: secondsLeftInMinute(at.getTime()), reason };
        }
        let presented: PresentedToken;
        try {
          presented = read();
        } catch (error) {
          await recordAttempt('refused', attempt, error instanceof Error ? error.message : 'unreadable');
          throw error;
        }
        const holder = 'token' in presented ? holderOf(tokens, presented.token) : null;
        if (holder !== null) return { outcome: 'admitted', holder };
        const problem = 'problem' in presented ? presented.problem : null;
        await recordAttempt('refused', attempt, problem ?? 'no token matches');
        return { outcome: 'refused', problem };
      });
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
