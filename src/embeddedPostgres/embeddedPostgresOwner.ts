import { unlinkSync, writeFileSync } from 'node:fs';
import { readOwnFile, serverUid } from './embeddedPostgresPlaces';
import { ownIdentity, processIdentity } from './embeddedPostgresProcess';
import { formatOwner, ownerHolds, parseOwner } from './embeddedPostgresTrust';

/** The owner file: which process's server runs on DATA_DIR, claimed by one process at a time (decision 0010). */

/** The file in DATA_DIR naming the process whose server runs on it (the service, or a command alone). */
export const OWNER_FILE = 'embedded-postgres.owner';

/** The owner file's record, read only if it is ours (a link or another user's file is exit 78). */
const ownerRecord = (ownerFile: string): ReturnType<typeof parseOwner> =>
  parseOwner(readOwnFile(ownerFile, serverUid(null)) ?? '');

/**
 * The live process that holds DATA_DIR, or null: the very process that wrote the owner file (same pid,
 * start time and boot), not whatever has its pid now. `server`: this cluster's running postmaster.
 */
export function holder(ownerFile: string, server: { ppid: number } | null): number | null {
  const record = ownerRecord(ownerFile);
  if (record === null || record.pid === process.pid) return null;
  return ownerHolds(record, processIdentity(record.pid), server) ? record.pid : null;
}

/** Claims DATA_DIR for this process's server; the live process that holds it instead, if one does. */
export function claim(ownerFile: string): number | null {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      // wx: O_EXCL, which also refuses to follow a link.
      writeFileSync(ownerFile, formatOwner(ownIdentity()), { flag: 'wx', mode: 0o600 });
      return null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const live = holder(ownerFile, null);
    if (live !== null) return live;
    // Its process is gone (killed), or the pid is another process's now: the claim is free.
    unlinkSync(ownerFile);
  }
  return holder(ownerFile, null) ?? process.pid;
}

/** Gives the claim up, if it is still this process's. */
export function release(ownerFile: string): void {
  try {
    if (ownerRecord(ownerFile)?.pid === process.pid) unlinkSync(ownerFile);
  } catch {
    // Not ours to remove.
  }
}
