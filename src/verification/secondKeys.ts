import { createHash } from 'node:crypto';
import { settingEntries } from '../parsing/settingList';
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
 * may appear several times (key rotation), a key not twice for one POS. What cannot be read that way (an
 * unknown algorithm, a third ':', an empty entry) is refused, never read as part of a key.
 */
export function parseSecondKeys(value: string): { keys: SecondKey[]; problems: string[] } {
  const keys: SecondKey[] = [];
  const { entries, problems } = settingEntries(value);
  for (const { number, text } of entries) {
    // Never echo the entry: it holds a key.
    const [posId = '', key = '', algorithm, ...rest] = text.split(':');
    if (posId === '' || key === '' || rest.length > 0) {
      problems.push(`entry ${number} is not of the form posId:secondKey[:algorithm]`);
      continue;
    }
    const minAlgorithm = algorithm === undefined ? null : readAlgorithm(algorithm);
    if (algorithm !== undefined && minAlgorithm === null) {
      problems.push(`entry ${number}: the algorithm after the key is not MD5, SHA-1, SHA-256, SHA-384 or SHA-512`);
      continue;
    }
    const earlier = keys.findIndex((k) => k.posId === posId && k.key.equals(Buffer.from(key, 'utf8')));
    if (earlier !== -1) {
      problems.push(`entry ${number} repeats the key of POS ${posId} given before`);
      continue;
    }
    keys.push({ posId, key: Buffer.from(key, 'utf8'), fingerprint: fingerprintKey(key), minAlgorithm });
  }
  return { keys, problems };
}
