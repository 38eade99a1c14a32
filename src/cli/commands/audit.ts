import os from 'node:os';
import { recordAudit, type AuditEntry } from '../../history/auditQueries';
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

/** Records one action of the command line. */
export function auditCommand(db: Db, entry: Omit<AuditEntry, 'actor' | 'role' | 'via'>): Promise<void> {
  return recordAudit(db, { ...entry, actor: commandLineActor(), role: null, via: 'command line' });
}
