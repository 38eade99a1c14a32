import type { Db } from '../../database/pool';
import type { ConsoleRole, StoredSession } from './session';

/**
 * The console's sessions (sql/012), each read by its key alone: the SHA-256 of the cookie's random id. What
 * the console writes: a session at sign-in (its name's ended ones deleted and its count capped), its last use
 * at most once a minute, and its end (sign-out, an ended session met, an operator ending a name's sessions).
 */

/** Sessions one name may hold at once; signing in past it ends the oldest. */
export const SESSIONS_PER_NAME = 20;

export interface NewSession {
  key: Buffer;
  name: string;
  role: ConsoleRole;
  tokenFingerprint: string;
  sourceAddress: string | null;
  expiresAt: Date;
}

/**
 * Opens a session, first deleting every session that ended (expired, or idle past `idleMs`: a few rows, the table
 * bounded by the cap) and, past SESSIONS_PER_NAME, the name's oldest: the table stays bounded however often anyone
 * signs in, and a person removed from the lists leaves at most their cap behind until the next sign-in of anyone.
 */
export async function openSession(db: Db, session: NewSession, now: Date, idleMs: number): Promise<void> {
  await db
    .deleteFrom('console_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', new Date(now.getTime() - idleMs))]))
    .execute();
  await db
    .deleteFrom('console_sessions')
    .where('name', '=', session.name)
    .where((eb) =>
      eb(
        'id_hash',
        'not in',
        eb
          .selectFrom('console_sessions as kept')
          .select('kept.id_hash')
          .where('kept.name', '=', session.name)
          .orderBy('kept.created_at', 'desc')
          .limit(SESSIONS_PER_NAME - 1),
      ),
    )
    .execute();
  await db
    .insertInto('console_sessions')
    .values({
      id_hash: session.key,
      name: session.name,
      role: session.role,
      token_fingerprint: session.tokenFingerprint,
      source_address: session.sourceAddress,
      created_at: now,
      last_seen_at: now,
      expires_at: session.expiresAt,
    })
    .execute();
}

/** The session a key names, or null: the one read every console request makes (its primary key). */
export async function findSession(db: Db, key: Buffer): Promise<StoredSession | null> {
  const row = await db
    .selectFrom('console_sessions')
    .select(['name', 'role', 'token_fingerprint', 'created_at', 'last_seen_at', 'expires_at'])
    .where('id_hash', '=', key)
    .executeTakeFirst();
  return row === undefined
    ? null
    : {
        name: row.name,
        role: row.role,
        tokenFingerprint: row.token_fingerprint,
        createdAt: row.created_at,
        lastSeenAt: row.last_seen_at,
        expiresAt: row.expires_at,
      };
}

/** Records a session's use (judgeSession says when: at most once a minute). */
export async function touchSession(db: Db, key: Buffer, at: Date): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: at }).where('id_hash', '=', key).execute();
}

/** Ends one session; answers whether it was there. */
export async function endSession(db: Db, key: Buffer): Promise<boolean> {
  const { numDeletedRows } = await db.deleteFrom('console_sessions').where('id_hash', '=', key).executeTakeFirst();
  return numDeletedRows > 0n;
}

/** Ends every session of a name; answers how many there were. */
export async function endSessionsOf(db: Db, name: string): Promise<number> {
  const { numDeletedRows } = await db.deleteFrom('console_sessions').where('name', '=', name).executeTakeFirst();
  return Number(numDeletedRows);
}

export interface SignedInSession {
  name: string;
  role: ConsoleRole;
  sourceAddress: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** Who is signed in now: the sessions neither expired nor idle, by name then age (bounded by the cap per name). */
export async function signedIn(db: Db, now: Date, idleMs: number, limit = 500): Promise<SignedInSession[]> {
  const rows = await db
    .selectFrom('console_sessions')
    .select(['name', 'role', 'source_address', 'created_at', 'last_seen_at', 'expires_at'])
    .where('expires_at', '>', now)
    .where('last_seen_at', '>=', new Date(now.getTime() - idleMs))
    .orderBy('name')
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    name: r.name,
    role: r.role,
    sourceAddress: r.source_address,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    expiresAt: r.expires_at,
  }));
}
