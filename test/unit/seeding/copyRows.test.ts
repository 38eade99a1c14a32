import { copyText, copyValue } from '../../../src/seeding/copyRows';

describe('COPY text', () => {
  it('When values hold the format specials, then they are escaped, NULL is \\N and objects are JSON', () => {
    expect(copyValue(null)).toBe('\\N');
    expect(copyValue('a\tb\nc\\d\re')).toBe('a\\tb\\nc\\\\d\\re');
    expect(copyValue({ a: 'x\ty' })).toBe('{"a":"x\\\\ty"}');
    expect(copyValue(42)).toBe('42');
    expect(
      copyText(
        [
          { a: 1, b: 'x' },
          { a: 2, b: null },
        ],
        ['a', 'b'],
      ),
    ).toBe('1\tx\n2\t\\N\n');
  });
});
