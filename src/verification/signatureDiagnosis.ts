import { createHash } from 'node:crypto';
import { parseNotification } from '../parsing/parseNotification';
import type { SecondKey } from './secondKeys';
import { parseSignatureHeader, type SignatureHeaderProblem } from './signatureHeader';
import { verifySignature, type SignatureMatch } from './verifySignature';

/**
 * Why a saved notification does or does not verify: the offline diagnosis behind `verify` (src/cli), pure.
 * It checks exactly as the receiver does, and then tries what a tool between the sender and the saved file
 * may have changed (a byte order mark, a trailing newline, CRLF, pretty-printing). It never reveals a key
 * or an expected signature.
 */

const HEADER_PROBLEMS: Record<SignatureHeaderProblem, string> = {
  missing_signature_header: 'no signature header value was given',
  missing_signature: 'the header has no single signature= field (missing, empty, or given twice with different values)',
  invalid_signature_encoding: 'the signature is not hex of the length its algorithm produces',
  unsupported_algorithm:
    'the algorithm is not one of MD5, SHA-1, SHA-256 (or SHA), SHA-384, SHA-512 (or it is given twice, differently)',
};

const HEX_LENGTH_ALGORITHM: Record<number, string> = {
  32: 'MD5',
  40: 'SHA-1',
  64: 'SHA-256',
  96: 'SHA-384',
  128: 'SHA-512',
};

export interface KeyTrial {
  posId: string;
  fingerprint: string;
  verifies: boolean;
}

export interface AlternativeForm {
  /** How the bytes were changed from the saved body. */
  form: string;
  bytes: number;
  sha256: string;
  /** The key that verifies this form, if one does. */
  verifiesWith: SignatureMatch | null;
}

export interface SignatureDiagnosis {
  verified: boolean;
  /** verified, or why not: a header problem, invalid_signature, pos_mismatch. */
  result: 'verified' | SignatureHeaderProblem | 'invalid_signature' | 'algorithm_not_allowed' | 'pos_mismatch';
  explanation: string;
  header: {
    problem: SignatureHeaderProblem | null;
    algorithm: string | null;
    sender: string | null;
    signatureHexDigits: number | null;
  };
  /** The bytes that were hashed (followed by the key, which is never shown). */
  body: {
    bytes: number;
    sha256: string;
    utf8: boolean;
    json: boolean;
    kind: 'order' | 'refund' | null;
    status: string | null;
    merchantPosId: string | null;
    trailingNewline: boolean;
    prettyPrinted: boolean;
    byteOrderMark: boolean;
    crlf: boolean;
  };
  keys: KeyTrial[];
  matchedKey: SignatureMatch | null;
  /** When the body names order.merchantPosId: whether a verifying key belongs to that POS. */
  pos: { merchantPosId: string; keysConfiguredForPos: number; verifyingKeyMatchesPos: boolean | null } | null;
  alternatives: AlternativeForm[];
  hints: string[];
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

function rawJson(body: Buffer): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as unknown;
  } catch {
    return undefined;
  }
}

function merchantPosIdOf(json: unknown): string | null {
  if (typeof json !== 'object' || json === null || !('order' in json)) return null;
  const { order } = json;
  if (typeof order !== 'object' || order === null || !('merchantPosId' in order)) return null;
  const pos = order.merchantPosId;
  return typeof pos === 'string' ? pos : typeof pos === 'number' ? String(pos) : null;
}

/** Other byte forms of the same document that a tool between the sender and the file may have made. */
function alternativeForms(body: Buffer, json: unknown): Array<{ form: string; bytes: Buffer }> {
  const forms: Array<{ form: string; bytes: Buffer }> = [];
  const add = (form: string, bytes: Buffer): void => {
    if (!bytes.equals(body) && !forms.some((f) => f.bytes.equals(bytes))) forms.push({ form, bytes });
  };
  let base = body;
  if (base.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))) {
    base = base.subarray(3);
    add('without the byte order mark', base);
  }
  const trimmed = Buffer.from(base.toString('latin1').replace(/[\r\n]+$/, ''), 'latin1');
  add('without the trailing newline', trimmed);
  if (base.includes('\r\n'))
    add('with LF line endings', Buffer.from(base.toString('latin1').replace(/\r\n/g, '\n'), 'latin1'));
  if (json !== undefined)
    add('in compact JSON (no whitespace between tokens)', Buffer.from(JSON.stringify(json), 'utf8'));
  return forms;
}

/**
 * Why a saved notification does or does not verify, offline, exactly as the receiver checks it:
 * hex(hash(body bytes + second key)) with the header's algorithm against every key, then the POS
 * of a verifying key against order.merchantPosId. Never reveals a key or an expected signature.
 */
export function diagnoseSignature(
  body: Buffer,
  headerValue: string | undefined,
  keys: readonly SecondKey[],
): SignatureDiagnosis {
  const json = rawJson(body);
  const parsed = parseNotification(body);
  const text = body.toString('latin1');
  const merchantPosId = merchantPosIdOf(json);
  const diagnosis: SignatureDiagnosis = {
    verified: false,
    result: 'invalid_signature',
    explanation: '',
    header: { problem: null, algorithm: null, sender: null, signatureHexDigits: null },
    body: {
      bytes: body.length,
      sha256: sha256(body),
      utf8: parsed.ok || parsed.reason !== 'invalid_utf8',
      json: json !== undefined,
      kind: parsed.ok ? parsed.notification.kind : null,
      status: parsed.ok ? parsed.notification.status : null,
      merchantPosId,
      trailingNewline: /[\r\n]$/.test(text),
      prettyPrinted: json !== undefined && /[{[,:]\s*\n\s+/.test(text),
      byteOrderMark: body.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])),
      crlf: text.includes('\r\n'),
    },
    keys: [],
    matchedKey: null,
    pos: null,
    alternatives: [],
    hints: [],
  };
  const hints = diagnosis.hints;

  const signatureField = /(?:^|;)\s*signature\s*=\s*([^;]*)/i.exec(headerValue ?? '')?.[1]?.trim();
  if (signatureField) diagnosis.header.signatureHexDigits = signatureField.length;
  const header = parseSignatureHeader(headerValue);
  if (!header.ok) {
    diagnosis.result = header.problem;
    diagnosis.header.problem = header.problem;
    diagnosis.explanation = `header problem: ${HEADER_PROBLEMS[header.problem]}`;
    const algorithmField = /(?:^|;)\s*algorithm\s*=\s*([^;]*)/i.exec(headerValue ?? '')?.[1]?.trim();
    if (header.problem === 'invalid_signature_encoding' && signatureField) {
      const likely = HEX_LENGTH_ALGORITHM[signatureField.length];
      if (!/^[0-9a-fA-F]+$/.test(signatureField))
        hints.push('the signature contains characters that are not hex digits');
      else if (likely)
        hints.push(
          `the signature has ${signatureField.length} hex digits, which is ${likely}, but the header says algorithm=${algorithmField ?? 'MD5 (the default)'}`,
        );
      else
        hints.push(
          `the signature has ${signatureField.length} hex digits, which is no supported algorithm's length (truncated or padded?)`,
        );
    }
    return diagnosis;
  }
  const algorithm = header.header.algorithm;
  diagnosis.header.algorithm = algorithm.toUpperCase().replace(/^SHA/, 'SHA-');
  diagnosis.header.sender = header.header.sender ?? null;

  const { matches, algorithmRefused } = verifySignature(header.header, body, keys);
  diagnosis.keys = keys.map((k) => ({
    posId: k.posId,
    fingerprint: k.fingerprint,
    verifies: matches.some((m) => m.keyFingerprint === k.fingerprint && m.posId === k.posId),
  }));
  if (merchantPosId !== null) {
    diagnosis.pos = {
      merchantPosId,
      keysConfiguredForPos: keys.filter((k) => k.posId === merchantPosId).length,
      verifyingKeyMatchesPos: matches.length === 0 ? null : matches.some((m) => m.posId === merchantPosId),
    };
  }

  if (matches.length > 0) {
    if (diagnosis.pos && !diagnosis.pos.verifyingKeyMatchesPos) {
      diagnosis.result = 'pos_mismatch';
      diagnosis.matchedKey = matches[0] as SignatureMatch;
      diagnosis.explanation = `the signature verifies with a key of POS ${matches.map((m) => m.posId).join(', ')}, but order.merchantPosId is ${merchantPosId}: the receiver refuses it (pos_mismatch)`;
      return diagnosis;
    }
    diagnosis.verified = true;
    diagnosis.result = 'verified';
    diagnosis.matchedKey = (matches.find((m) => m.posId === merchantPosId) ?? matches[0]) as SignatureMatch;
    diagnosis.explanation = `verified with the key of POS ${diagnosis.matchedKey.posId} (fingerprint ${diagnosis.matchedKey.keyFingerprint})`;
    if (!parsed.ok)
      hints.push(
        `the signature is good but the body cannot be read (${parsed.reason}: ${parsed.detail}); the receiver quarantines it`,
      );
    return diagnosis;
  }

  if (algorithmRefused) {
    diagnosis.result = 'algorithm_not_allowed';
    diagnosis.explanation = `the signature verifies only with keys pinned to a stronger algorithm than ${diagnosis.header.algorithm} (SECOND_KEYS posId:key:ALGORITHM): the receiver refuses it (algorithm_not_allowed)`;
    return diagnosis;
  }
  diagnosis.explanation = `the signature matches none of the ${keys.length} key(s) tried with ${diagnosis.header.algorithm}`;
  for (const form of alternativeForms(body, json)) {
    const formMatches = verifySignature(header.header, form.bytes, keys).matches;
    diagnosis.alternatives.push({
      form: form.form,
      bytes: form.bytes.length,
      sha256: sha256(form.bytes),
      verifiesWith: formMatches[0] ?? null,
    });
  }
  const verifying = diagnosis.alternatives.find((a) => a.verifiesWith !== null);
  if (verifying?.verifiesWith) {
    hints.push(
      `the body ${verifying.form} WOULD verify (POS ${verifying.verifiesWith.posId}, key ${verifying.verifiesWith.keyFingerprint}): ` +
        'the saved file is not the exact bytes that were signed; the sender signs its compact JSON, so save the raw request body byte for byte',
    );
  } else {
    if (diagnosis.body.prettyPrinted)
      hints.push(
        'the body is pretty-printed: the sender posts compact JSON, so this was probably re-serialized after receipt',
      );
    if (diagnosis.body.trailingNewline)
      hints.push('the body ends with a newline, which the sender does not send (an editor or echo may have added it)');
    if (diagnosis.body.byteOrderMark)
      hints.push('the body starts with a UTF-8 byte order mark, which the sender does not send');
    if (diagnosis.alternatives.length > 0)
      hints.push(`no re-serialization tried (${diagnosis.alternatives.map((a) => a.form).join('; ')}) verifies either`);
  }
  if (diagnosis.pos && diagnosis.pos.keysConfiguredForPos === 0) {
    hints.push(
      `no key is configured for POS ${merchantPosId} (the body's order.merchantPosId): only that POS's second key can verify it`,
    );
  }
  if (keys.length === 0) hints.push('no keys were tried');
  return diagnosis;
}

/** Accepts a bare header value or a saved header line (`OpenSvc-Signature: sender=...`). */
export function headerValueOf(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  // The receiver reads OpenSvc-Signature first, X-OpenSvc-Signature only without it.
  const named =
    lines.find((l) => /^opensvc-signature\s*:/i.test(l)) ?? lines.find((l) => /^x-opensvc-signature\s*:/i.test(l));
  if (named) return named.slice(named.indexOf(':') + 1).trim();
  return (lines[0] ?? '').trim();
}
