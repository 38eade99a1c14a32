import { parseSignatureHeader } from '../../src/verification/signatureHeader';
import { parseSecondKeys } from '../../src/verification/secondKeys';
import { verifySignature } from '../../src/verification/verifySignature';
import { fixtures, signatureHeaderOf } from '../support/fixtures';
import { sign } from '../support/signing';

const body = Buffer.from('{"order":{"orderId":"A","status":"PENDING"}}');
const keys = parseSecondKeys('1:k1,2:k2,2:k2-next').keys;

describe('parseSignatureHeader', () => {
  it('When fields come in any order with whitespace and a trailing ;, then they are read', () => {
    const header = parseSignatureHeader(
      ' algorithm = SHA-256 ; content=DOCUMENT;signature=' + 'AB'.repeat(32) + ' ; sender=checkout;',
    );
    expect(header).toMatchObject({ ok: true, header: { algorithm: 'sha256', sender: 'checkout' } });
  });

  it.each([
    ['MD5', 'md5', 32],
    ['md5', 'md5', 32],
    ['SHA-1', 'sha1', 40],
    ['SHA1', 'sha1', 40],
    ['SHA', 'sha256', 64],
    ['sha-256', 'sha256', 64],
    ['SHA256', 'sha256', 64],
    ['SHA-384', 'sha384', 96],
    ['sha512', 'sha512', 128],
  ])('When the algorithm is spelled %s, then it means %s', (spelling, name, hexLength) => {
    const header = parseSignatureHeader(`signature=${'a'.repeat(hexLength)};algorithm=${spelling}`);
    expect(header).toMatchObject({ ok: true, header: { algorithm: name } });
  });

  it('When a value contains "=", then only the first "=" splits the field', () => {
    expect(parseSignatureHeader(`sender=a=b;signature=${'0'.repeat(32)};algorithm=MD5`)).toMatchObject({
      ok: true,
      header: { sender: 'a=b' },
    });
  });

  it.each([
    [undefined, 'missing_signature_header'],
    ['', 'missing_signature_header'],
    ['sender=checkout;algorithm=MD5;content=DOCUMENT', 'missing_signature'],
    ['signature=;algorithm=MD5', 'missing_signature'],
    [`signature=${'a'.repeat(32)};signature=${'b'.repeat(32)};algorithm=MD5`, 'missing_signature'],
    [`signature=${'z'.repeat(32)};algorithm=MD5`, 'invalid_signature_encoding'],
    [`signature=${'a'.repeat(31)};algorithm=MD5`, 'invalid_signature_encoding'],
    [`signature=${'a'.repeat(64)};algorithm=MD5`, 'invalid_signature_encoding'],
    [`signature=${'a'.repeat(32)};algorithm=CRC32`, 'unsupported_algorithm'],
    [`signature=${'a'.repeat(32)};algorithm=MD5;algorithm=SHA-256`, 'unsupported_algorithm'],
  ])('When the header is %p, then it is refused as %s', (value, problem) => {
    expect(parseSignatureHeader(value)).toEqual({ ok: false, problem });
  });

  it('When a field repeats with the same value, then it is accepted', () => {
    const sig = 'c'.repeat(32);
    expect(parseSignatureHeader(`signature=${sig};signature=${sig};algorithm=MD5`).ok).toBe(true);
  });
});

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

describe('parseSecondKeys', () => {
  it('When entries are malformed, then each is named by position and no key text is echoed', () => {
    const { problems } = parseSecondKeys('1:secret-one,broken-secret,:x');
    expect(problems).toEqual([
      'entry 2 is not of the form posId:secondKey[:algorithm]',
      'entry 3 is not of the form posId:secondKey[:algorithm]',
    ]);
    expect(problems.join()).not.toMatch(/secret/);
  });

  it('When an entry has an algorithm after the key, then it is the minimum; an unknown one is refused, never read as part of the key', () => {
    expect(parseSecondKeys('1:a:sha-256').keys[0]).toMatchObject({ key: Buffer.from('a'), minAlgorithm: 'sha256' });
    expect(parseSecondKeys('1:a:SHA1').keys[0]).toMatchObject({ minAlgorithm: 'sha1' });
    expect(parseSecondKeys('1:a').keys[0]).toMatchObject({ minAlgorithm: null });
    expect(parseSecondKeys('300746:secret:SHA-999,1:k').problems).toEqual([
      'entry 1: the algorithm after the key is not MD5, SHA-1, SHA-256, SHA-384 or SHA-512',
    ]);
    expect(parseSecondKeys('1:a:b:SHA1').problems).toEqual(['entry 1 is not of the form posId:secondKey[:algorithm]']);
  });

  it('When entries are separated by ";" or a space, or one is empty or repeated, then each is refused by number', () => {
    expect(parseSecondKeys('1:secret;2:other').problems).toEqual([
      "entry 1 holds a space or ';': entries are separated by ','",
    ]);
    expect(parseSecondKeys('1:secret 2:other').problems).toEqual([
      "entry 1 holds a space or ';': entries are separated by ','",
    ]);
    expect(parseSecondKeys('1:secret,,2:other,').problems).toEqual([
      "entry 2 is empty (a stray ',')",
      "entry 4 is empty (a stray ',')",
    ]);
    expect(parseSecondKeys('"1:secret"').problems).toEqual(['entry 1 holds a quote: write the value without quotes']);
    // Rotation: two keys of one POS; the same key twice is a slip.
    expect(parseSecondKeys('1:secret,1:next').keys).toHaveLength(2);
    expect(parseSecondKeys('1:secret,2:x,1:secret').problems).toEqual([
      'entry 3 repeats the key of POS 1 given before',
    ]);
  });
});
