import fc from 'fast-check';
import { settingEntries } from '../../../src/parsing/settingList';

// The entries of a comma-separated setting, as settingEntries reads them; how each setting reads its entries
// (keys, credentials, addresses) is load.test.ts's.

describe('settingEntries', () => {
  it('When entries are separated by commas, spaced or not, then each is read trimmed and numbered from 1', () => {
    expect(settingEntries(' a , b,c ')).toEqual({
      entries: [
        { number: 1, text: 'a' },
        { number: 2, text: 'b' },
        { number: 3, text: 'c' },
      ],
      problems: [],
    });
  });

  it('When an entry is empty, holds a space, a ";" or a quote, then it is refused by its number, never its text', () => {
    const { entries, problems } = settingEntries('a,,b c,d;e,"f",ok');
    expect(entries).toEqual([
      { number: 1, text: 'a' },
      { number: 6, text: 'ok' },
    ]);
    expect(problems).toEqual([
      "entry 2 is empty (a stray ',')",
      "entry 3 holds a space or ';': entries are separated by ','",
      "entry 4 holds a space or ';': entries are separated by ','",
      'entry 5 holds a quote: write the value without quotes',
    ]);
  });

  it('When any value is read, then every entry is either read or refused, and no problem repeats an entry’s text', () => {
    const PROBLEM =
      /^entry \d+ (is empty \(a stray ','\)|holds a space or ';': entries are separated by ','|holds a quote: write the value without quotes)$/;
    const entry = fc.stringMatching(/^[a-z0-9:/.]{1,12}$/);
    fc.assert(
      fc.property(fc.array(fc.oneof(entry, fc.constantFrom('', ' x y ', 'p;q', "'s'")), { minLength: 1 }), (parts) => {
        const { entries, problems } = settingEntries(parts.join(','));
        expect(entries.length + problems.length).toBe(parts.length);
        // Each problem is one of the fixed sentences about an entry's number: none can carry an entry's text.
        for (const problem of problems) expect(problem).toMatch(PROBLEM);
      }),
    );
  });
});
