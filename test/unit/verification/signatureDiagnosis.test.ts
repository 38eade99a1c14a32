import { createHash } from 'node:crypto';
import { fingerprintKey, parseSecondKeys } from '../../../src/verification/secondKeys';
import { diagnoseSignature, headerValueOf } from '../../../src/verification/signatureDiagnosis';
import { OTHER_KEY, OTHER_POS_ID, orderBody, POS_ID, SECOND_KEY, sign } from '../../support/signing';

const keys = parseSecondKeys(`${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}`).keys;
const compact = orderBody({ orderId: 'DIAG1', status: 'COMPLETED' });
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const diagnose = (saved: string | Buffer, header: string | undefined, tried = keys) =>
  diagnoseSignature(Buffer.from(saved), header, tried);

describe('the signature diagnosis', () => {
  it('When the body verifies with its POS key, then it says so, names the key and the hashed bytes, and has no hints', () => {
    const d = diagnose(compact, sign(compact, SECOND_KEY));
    expect(d).toMatchObject({
      verified: true,
      result: 'verified',
      matchedKey: { posId: POS_ID, keyFingerprint: fingerprintKey(SECOND_KEY) },
      header: { problem: null, algorithm: 'MD5', sender: 'checkout', signatureHexDigits: 32 },
      body: {
        bytes: Buffer.byteLength(compact),
        sha256: sha256(Buffer.from(compact)),
        utf8: true,
        json: true,
        kind: 'order',
        status: 'COMPLETED',
        merchantPosId: POS_ID,
        trailingNewline: false,
        prettyPrinted: false,
        byteOrderMark: false,
        crlf: false,
      },
      keys: [
        { posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), verifies: true },
        { posId: OTHER_POS_ID, fingerprint: fingerprintKey(OTHER_KEY), verifies: false },
      ],
      pos: { merchantPosId: POS_ID, keysConfiguredForPos: 1, verifyingKeyMatchesPos: true },
      alternatives: [],
      hints: [],
    });
    expect(d.explanation).toBe(`verified with the key of POS ${POS_ID} (fingerprint ${fingerprintKey(SECOND_KEY)})`);
  });

  it('When the header is missing, then the result is its problem and no key is tried', () => {
    const d = diagnose(compact, undefined);
    expect(d).toMatchObject({ verified: false, result: 'missing_signature_header', keys: [], hints: [] });
    expect(d.explanation).toBe('header problem: no signature header value was given');
  });

  it.each([
    [
      'the hex length of another algorithm',
      `signature=${'a'.repeat(64)};algorithm=MD5`,
      /64 hex digits, which is SHA-256, but the header says algorithm=MD5/,
    ],
    [
      'no algorithm and a SHA-1 length',
      `signature=${'a'.repeat(40)}`,
      /which is SHA-1, but the header says algorithm=MD5 \(the default\)/,
    ],
    ['characters that are not hex', `signature=${'g'.repeat(32)}`, /not hex digits/],
    ['no algorithm length', `signature=${'a'.repeat(33)}`, /33 hex digits, which is no supported algorithm's length/],
  ])('When the signature has %s, then it is invalid_signature_encoding with a hint', (_what, header, hint) => {
    const d = diagnose(compact, header);
    expect(d.result).toBe('invalid_signature_encoding');
    expect(d.header.problem).toBe('invalid_signature_encoding');
    expect(d.hints).toEqual([expect.stringMatching(hint)]);
  });

  it("When the body verifies with another POS's key, then it is pos_mismatch, as the receiver refuses it", () => {
    const d = diagnose(compact, sign(compact, OTHER_KEY));
    expect(d).toMatchObject({
      verified: false,
      result: 'pos_mismatch',
      matchedKey: { posId: OTHER_POS_ID },
      pos: { merchantPosId: POS_ID, verifyingKeyMatchesPos: false },
    });
  });

  it('When the only verifying key is pinned to a stronger algorithm, then it is algorithm_not_allowed', () => {
    const pinned = parseSecondKeys(`${POS_ID}:${SECOND_KEY}:SHA-256`).keys;
    const d = diagnose(compact, sign(compact, SECOND_KEY), pinned);
    expect(d).toMatchObject({ verified: false, result: 'algorithm_not_allowed', alternatives: [] });
    expect(d.explanation).toMatch(/stronger algorithm than MD5/);
  });

  it.each([
    ['a trailing newline', `${compact}\n`, 'without the trailing newline'],
    [
      'a byte order mark',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(compact)]),
      'without the byte order mark',
    ],
    ['pretty-printing', JSON.stringify(JSON.parse(compact), null, 2), 'in compact JSON (no whitespace between tokens)'],
  ])('When the saved body gained %s, then it fails and says which form of it would verify', (_what, saved, form) => {
    const d = diagnose(saved, sign(compact, SECOND_KEY));
    expect(d).toMatchObject({ verified: false, result: 'invalid_signature' });
    const verifying = d.alternatives.find((a) => a.verifiesWith !== null);
    expect(verifying).toMatchObject({ form, sha256: sha256(Buffer.from(compact)), verifiesWith: { posId: POS_ID } });
    expect(d.hints).toEqual([expect.stringContaining(`the body ${form} WOULD verify (POS ${POS_ID}`)]);
  });

  it('When the signed body had LF line endings and the saved one has CRLF, then the LF form verifies', () => {
    const signed = JSON.stringify(JSON.parse(compact), null, 2);
    const d = diagnose(signed.replace(/\n/g, '\r\n'), sign(signed, SECOND_KEY));
    expect(d.body.crlf).toBe(true);
    expect(d.alternatives.find((a) => a.verifiesWith !== null)?.form).toBe('with LF line endings');
  });

  it('When no form verifies, then the hints name what looks re-serialized and what was tried', () => {
    const saved = `${JSON.stringify(JSON.parse(compact), null, 2)}\n`;
    const d = diagnose(saved, sign(compact, 'not-the-key'));
    expect(d.explanation).toBe('the signature matches none of the 2 key(s) tried with MD5');
    expect(d.alternatives.map((a) => a.verifiesWith)).toEqual([null, null]);
    expect(d.hints).toEqual([
      expect.stringContaining('the body is pretty-printed'),
      expect.stringContaining('the body ends with a newline'),
      'no re-serialization tried (without the trailing newline; in compact JSON (no whitespace between tokens)) verifies either',
    ]);
  });

  it("When no key is given, or none for the body's POS, then the hints say so", () => {
    expect(diagnose(compact, sign(compact, SECOND_KEY), []).hints).toEqual([
      `no key is configured for POS ${POS_ID} (the body's order.merchantPosId): only that POS's second key can verify it`,
      'no keys were tried',
    ]);
  });

  it('When an unreadable body verifies, then it is verified with a hint that the receiver quarantines it', () => {
    const unreadable = '{"order":{"orderId":"X"}}';
    const d = diagnose(unreadable, sign(unreadable, SECOND_KEY));
    expect(d).toMatchObject({ verified: true, pos: null, body: { json: true, kind: null, merchantPosId: null } });
    expect(d.hints).toEqual([
      expect.stringMatching(/^the signature is good but the body cannot be read .*quarantines it$/),
    ]);
  });
});

describe('the header as saved', () => {
  it.each([
    ['a bare value', 'sender=a;signature=b', 'sender=a;signature=b'],
    ['a header line', 'OpenSvc-Signature: sender=a;signature=b\n', 'sender=a;signature=b'],
    [
      'saved headers',
      'Host: x\r\nX-OpenSvc-Signature: signature=old\r\nopensvc-signature:  signature=new \r\n',
      'signature=new',
    ],
    ['the X- header alone', '\nX-OpenSvc-Signature: signature=old\n', 'signature=old'],
    ['nothing', '\n\n', ''],
  ])('When the file holds %s, then the value is the one the receiver reads', (_what, text, value) => {
    expect(headerValueOf(text)).toBe(value);
  });
});
