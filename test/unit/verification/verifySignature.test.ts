import { parseSignatureHeader } from '../../../src/verification/signatureHeader';
import { parseSecondKeys } from '../../../src/verification/secondKeys';
import { verifySignature } from '../../../src/verification/verifySignature';
import { fixtures, signatureHeaderOf } from '../../support/fixtures';
import { sign } from '../../support/signing';
const body = Buffer.from('{"order":{"orderId":"A","status":"PENDING"}}');
const keys = parseSecondKeys('1:k1,2:k2,2:k2-next').keys;

describe('verifySignature', () => {
  const verify = (header: string, b: Buffer = body) => {
    const parsed = parseSignatureHeader(header);
    if (!parsed.ok) throw new Error(parsed.problem);
    return verifySignature(parsed.header, b, keys).matches;
  };

  it.each(['MD5', 'SHA-1', 'SHA-256', 'SHA-384', 'SHA-512', 'SHA'])(
    'When signed with %s, then the POS whose key signed matches',
    (algorithm) => {
      expect(verify(sign(body, 'k1', algorithm))).toEqual([{ posId: '1', keyFingerprint: keys[0]?.fingerprint }]);
    },
  );

  it('When the signature hex is upper case, then it still matches', () => {
    const header = sign(body, 'k1').replace(
      /signature=([0-9a-f]+)/,
      (_, hex: string) => `signature=${hex.toUpperCase()}`,
    );
    expect(verify(header)).toHaveLength(1);
  });

  it('When a rotated second key of a POS signed, then that POS matches', () => {
    expect(verify(sign(body, 'k2-next'))[0]?.posId).toBe('2');
  });

  it('When one byte of the body differs, then nothing matches', () => {
    const flipped = Buffer.from(body);
    flipped[5] = (flipped[5] as number) ^ 1;
    expect(verify(sign(body, 'k1'), flipped)).toEqual([]);
  });

  it('When the key is unknown, then nothing matches', () => {
    expect(verify(sign(body, 'other'))).toEqual([]);
  });

  it('When the body is not UTF-8, then its exact bytes are what is verified', () => {
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x7d]);
    expect(verify(sign(bytes, 'k1'), bytes)).toHaveLength(1);
  });

  it('When checked against every captured fixture, then the result is what the capture says', () => {
    for (const f of fixtures.filter((x) => x.signatureVerifies !== null && x.secondKey !== null)) {
      const parsed = parseSignatureHeader(signatureHeaderOf(f));
      const fixtureKeys = parseSecondKeys(`pos:${f.secondKey}`).keys;
      const ok =
        parsed.ok && verifySignature(parsed.header, Buffer.from(f.body, 'utf8'), fixtureKeys).matches.length === 1;
      expect({ id: f.id, ok }).toEqual({ id: f.id, ok: f.signatureVerifies });
    }
  });
});
