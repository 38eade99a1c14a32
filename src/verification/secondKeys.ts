import { createHash } from 'node:crypto';
import { ALGORITHM_STRENGTH, readAlgorithm, type SignatureAlgorithm } from './signatureHeader';

/** A POS second key (spec, "Authentication" item 5). The key itself never leaves this object in logs. */
export interface SecondKey {
  posId: string;
  key: Buffer;
  /** Short, non-reversible identifier for logs and the audit trail: first 12 hex chars of SHA-256(key). */
  fingerprint: string;
  /** The weakest algorithm a signature made with this key may use (`posId:key:SHA-256`); none: any. */
  minAlgorithm: SignatureAlgorithm | null;
}

export function fingerprintKey(key: Buffer | string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/**
 * The spec's public sandbox key (POS 300746). Anyone can sign with it: it verifies nothing in production.
 * It is the local default, and the service warns when it is configured with the production allowlist.
 */
export const PUBLIC_SANDBOX_KEY = { posId: '300746', key: 'b6ca15b0d1020e8094d9b5f8d163db54' } as const;

export const isPublicSandboxKey = (key: SecondKey): boolean => key.key.toString('utf8') === PUBLIC_SANDBOX_KEY.key;

/** Whether a signature made with `algorithm` may be checked with this key. */
export const allowsAlgorithm = (key: SecondKey, algorithm: SignatureAlgorithm): boolean =>
  key.minAlgorithm === null || ALGORITHM_STRENGTH[algorithm] >= ALGORITHM_STRENGTH[key.minAlgorithm];

/**
 * Parses SECOND_KEYS: comma-separated `posId:secondKey` entries, each optionally followed by `:ALGORITHM`,
 * the weakest signature algorithm accepted with that key (e.g. `:SHA-256` refuses MD5 and SHA-1); a POS
 * may appear several times (key rotation). The key is everything between the first ':' and that suffix.
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
    let key = colon === -1 ? '' : entry.slice(colon + 1).trim();
    const last = key.lastIndexOf(':');
    const minAlgorithm = last === -1 ? null : readAlgorithm(key.slice(last + 1));
    if (minAlgorithm !== null) key = key.slice(0, last).trim();
    if (posId === '' || key === '') {
      // Never echo the entry: it may hold a key.
      problems.push(`entry ${index + 1} is not of the form posId:secondKey[:algorithm]`);
      return;
    }
    keys.push({ posId, key: Buffer.from(key, 'utf8'), fingerprint: fingerprintKey(key), minAlgorithm });
  });
  return { keys, problems };
}
