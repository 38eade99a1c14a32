import { parseSecondKeys } from '../../../src/verification/secondKeys';

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
