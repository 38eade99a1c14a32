import { createHash, timingSafeEqual } from 'node:crypto';
import { allowsAlgorithm, type SecondKey } from './secondKeys';
import type { SignatureHeader } from './signatureHeader';

export interface SignatureMatch {
  posId: string;
  keyFingerprint: string;
}

/** What a signature proves: the keys it verifies with, and whether it verified only with keys that refuse its algorithm. */
export interface Verification {
  matches: SignatureMatch[];
  /** It verified with a key, but only with keys pinned to a stronger algorithm (SECOND_KEYS `:SHA-256`). */
  algorithmRefused: boolean;
}

/** hex(hash(body bytes followed by the second key)): spec, "Authentication" item 7. */
export function expectedSignature(algorithm: string, body: Buffer, key: Buffer): Buffer {
  return createHash(algorithm).update(body).update(key).digest();
}

/**
 * Every configured key whose signature equals the received one and that accepts its algorithm. The exact
 * bytes received are hashed (never a re-serialized body). Each comparison is constant-time and every key
 * is tried, so timing does not reveal which key, if any, came close. Several matches are possible only
 * when one key is configured for several POS.
 */
export function verifySignature(header: SignatureHeader, body: Buffer, keys: readonly SecondKey[]): Verification {
  const matches: SignatureMatch[] = [];
  let algorithmRefused = false;
  for (const key of keys) {
    const expected = expectedSignature(header.algorithm, body, key.key);
    if (expected.length !== header.signature.length || !timingSafeEqual(expected, header.signature)) continue;
    if (allowsAlgorithm(key, header.algorithm)) matches.push({ posId: key.posId, keyFingerprint: key.fingerprint });
    else algorithmRefused = true;
  }
  return { matches, algorithmRefused: algorithmRefused && matches.length === 0 };
}
