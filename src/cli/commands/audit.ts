import os from 'node:os';
import { beginAudit, completeAudit, type AuditEntry } from '../../audit/auditQueries';
import type { Db } from '../../database/pool';

/**
 * The command line's actions in the audit trail (console_audit), beside the console's and the admin API's: who
 * ran it is the OS user and the host, as the console records a person's name. Dry runs and reads are not recorded.
 */

/** The OS user (or, with no name for the uid, as in a container, the uid) and the host: `alice@ops-1`. */
export function commandLineActor(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? 'unknown'}`;
  }
  return `${user}@${os.hostname()}`;
}

/**
 * Records one action of the command line, and answers its row's id: an action recorded before it acts says how it
 * ended with completeAudit (src/audit/auditQueries.ts).
 */
export function auditCommand(db: Db, entry: Omit<AuditEntry, 'actor' | 'role' | 'via'>): Promise<string> {
  return beginAudit(db, { ...entry, actor: commandLineActor(), role: null, via: 'command line' });
}

/** How an action ended, for its audit row: its result, and the detail and order it turned out to concern. */
export interface AuditOutcome {
  result: string;
  detail?: string;
  orderId?: string;
}

/**
 * Runs one action of the command line on the record: its row is written before `act` runs (result `started`), and
 * says after how it ended (`outcome`), or that it failed and with what error, so that whatever happens meanwhile
 * the action is in the audit trail.
 */
export async function auditedCommand<T>(
  db: Db,
  entry: Omit<AuditEntry, 'actor' | 'role' | 'via' | 'result'>,
  act: () => Promise<T>,
  outcome: (done: T) => AuditOutcome,
): Promise<T> {
  const row = await auditCommand(db, { ...entry, result: 'started' });
  let done: T;
  try {
    done = await act();
  } catch (error) {
    await completeAudit(db, [row], {
      result: 'failed',
      detail: error instanceof Error ? error.message : String(error),
    }).catch(() => undefined);
    throw error;
  }
  await completeAudit(db, [row], outcome(done));
  return done;
}
