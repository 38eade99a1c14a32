import { parseSignatureHeader } from '../../../src/verification/signatureHeader';

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
