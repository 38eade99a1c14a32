import { createHash, timingSafeEqual } from 'node:crypto';
import type { SecondKey } from './secondKeys';
import type { SignatureHeader } from './signatureHeader';

export interface SignatureMatch {
  posId: string;
  keyFingerprint: string;
}

/** hex(hash(body bytes followed by the second key)): spec, "Authentication" item 7. */
export function expectedSignature(algorithm: string, body: Buffer, key: Buffer): Buffer {
  return createHash(algorithm).update(body).update(key).digest();
}

/**
 * Every configured key whose signature equals the received one. The exact bytes received are
 * hashed (never a re-serialized body). Each comparison is constant-time and every key is tried,
 * so timing does not reveal which key, if any, came close.
 * Several matches are possible only when one key is configured for several POS.
 */
export function verifySignature(header: SignatureHeader, body: Buffer, keys: readonly SecondKey[]): SignatureMatch[] {
  const matches: SignatureMatch[] = [];
  for (const key of keys) {
    const expected = expectedSignature(header.algorithm, body, key.key);
    if (expected.length === header.signature.length && timingSafeEqual(expected, header.signature)) {
      matches.push({ posId: key.posId, keyFingerprint: key.fingerprint });
    }
  }
  return matches;
}
