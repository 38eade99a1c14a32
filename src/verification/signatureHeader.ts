/**
 * The notification signature header (spec, "Authentication" item 7):
 *   sender=checkout;signature=<hex>;algorithm=<MD5 usually>;content=DOCUMENT
 * Fields come in any order; each is split on its first '='; whitespace around
 * fields and a trailing ';' are tolerated.
 */

export type SignatureAlgorithm = 'md5' | 'sha1' | 'sha256' | 'sha384' | 'sha512';

export interface SignatureHeader {
  algorithm: SignatureAlgorithm;
  /** Signature bytes decoded from hex (hex is compared case-insensitively by decoding it). */
  signature: Buffer;
  sender?: string;
}

export type SignatureHeaderProblem =
  'missing_signature_header' | 'missing_signature' | 'invalid_signature_encoding' | 'unsupported_algorithm';

export type SignatureHeaderResult =
  { ok: true; header: SignatureHeader } | { ok: false; problem: SignatureHeaderProblem };

/** Node's digest name and hex length for each accepted spelling (upper-cased, dashes removed). */
const ALGORITHMS: Record<string, { name: SignatureAlgorithm; hexLength: number }> = {
  MD5: { name: 'md5', hexLength: 32 },
  SHA1: { name: 'sha1', hexLength: 40 },
  SHA: { name: 'sha256', hexLength: 64 },
  SHA256: { name: 'sha256', hexLength: 64 },
  SHA384: { name: 'sha384', hexLength: 96 },
  SHA512: { name: 'sha512', hexLength: 128 },
};

/** Weakest to strongest. */
export const ALGORITHM_STRENGTH: Readonly<Record<SignatureAlgorithm, number>> = {
  md5: 0,
  sha1: 1,
  sha256: 2,
  sha384: 3,
  sha512: 4,
};

/** Node's digest name of an algorithm as the header or SECOND_KEYS spells it (any case, dashes or not); null if none. */
export function readAlgorithm(spelling: string): SignatureAlgorithm | null {
  return ALGORITHMS[spelling.trim().toUpperCase().replace(/-/g, '')]?.name ?? null;
}

const HEX = /^[0-9a-fA-F]+$/;

/** Splits `a=b; c=d;` into name -> every value given for it (names case-insensitive). */
function fields(value: string): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const part of value.split(';')) {
    const field = part.trim();
    if (field === '') continue;
    const eq = field.indexOf('=');
    const name = (eq === -1 ? field : field.slice(0, eq)).trim().toLowerCase();
    const fieldValue = eq === -1 ? '' : field.slice(eq + 1).trim();
    const list = result.get(name);
    if (list) list.push(fieldValue);
    else result.set(name, [fieldValue]);
  }
  return result;
}

/** A field given twice with different values is ambiguous, so it counts as absent. */
function single(map: Map<string, string[]>, name: string): string | undefined {
  const values = map.get(name);
  if (!values || values.length === 0) return undefined;
  const first = values[0];
  return values.every((v) => v === first) ? first : undefined;
}

export function parseSignatureHeader(value: string | undefined): SignatureHeaderResult {
  if (value === undefined || value.trim() === '') return { ok: false, problem: 'missing_signature_header' };
  const map = fields(value);

  // No algorithm field means MD5, the spec's usual one; two different ones mean nothing.
  const algorithmField = map.has('algorithm') ? single(map, 'algorithm') : 'MD5';
  if (algorithmField === undefined) return { ok: false, problem: 'unsupported_algorithm' };
  const algorithmName = algorithmField.toUpperCase().replace(/-/g, '');
  const algorithm = ALGORITHMS[algorithmName];
  if (!algorithm) return { ok: false, problem: 'unsupported_algorithm' };

  const signature = single(map, 'signature');
  if (signature === undefined || signature === '') return { ok: false, problem: 'missing_signature' };
  if (signature.length !== algorithm.hexLength || !HEX.test(signature)) {
    return { ok: false, problem: 'invalid_signature_encoding' };
  }

  const sender = single(map, 'sender');
  return {
    ok: true,
    header: { algorithm: algorithm.name, signature: Buffer.from(signature, 'hex'), ...(sender ? { sender } : {}) },
  };
}
