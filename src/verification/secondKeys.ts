import { createHash } from 'node:crypto';

/** A POS second key (spec, "Authentication" item 5). The key itself never leaves this object in logs. */
export interface SecondKey {
  posId: string;
  key: Buffer;
  /** Short, non-reversible identifier for logs and the audit trail: first 12 hex chars of SHA-256(key). */
  fingerprint: string;
}

export function fingerprintKey(key: Buffer | string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/**
 * Parses SECOND_KEYS: comma-separated `posId:secondKey` entries; a POS may appear several times
 * (key rotation). The key is everything after the first ':'.
 */
export function parseSecondKeys(value: string): { keys: SecondKey[]; problems: string[] } {
  const keys: SecondKey[] = [];
  const problems: string[] = [];
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) problems.push('at least one posId:secondKey entry is required');
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const posId = colon === -1 ? '' : entry.slice(0, colon).trim();
    const key = colon === -1 ? '' : entry.slice(colon + 1).trim();
    if (posId === '' || key === '') {
      // Never echo the entry: it may hold a key.
      problems.push(`entry ${index + 1} is not of the form posId:secondKey`);
      return;
    }
    keys.push({ posId, key: Buffer.from(key, 'utf8'), fingerprint: fingerprintKey(key) });
  });
  return { keys, problems };
}
