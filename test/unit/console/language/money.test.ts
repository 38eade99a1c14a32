import fc from 'fast-check';
import {
  currencyDigits,
  formatMoney,
  majorUnits,
  minorToMajor,
  subtractMinor,
  sumMinor,
} from '../../../../src/console/language/money';

/** Intl writes a no-break space (U+00A0) or a narrow one (U+202F) where people see a space. */
const spaced = (text: string | undefined): string | undefined => text?.replace(/[\u00a0\u202f]/g, ' ');
const shown = (minor: string | null, currency: string | null, locale = 'en-GB') =>
  spaced(formatMoney(minor, currency, locale)?.text);

describe('money: amounts in major units', () => {
  it('When a currency is known, then its own number of decimals is used', () => {
    expect(currencyDigits('PLN')).toBe(2);
    expect(currencyDigits('EUR')).toBe(2);
    expect(currencyDigits('JPY')).toBe(0);
    expect(currencyDigits('KRW')).toBe(0);
    expect(currencyDigits('BHD')).toBe(3);
    expect(currencyDigits('KWD')).toBe(3);
    expect(currencyDigits('XYZ')).toBeNull();
    expect(currencyDigits('pln')).toBeNull();
  });

  it('When minor units are turned into major units, then every digit is kept, with a dot', () => {
    expect(minorToMajor('223471', 2)).toBe('2234.71');
    expect(minorToMajor('28013', 2)).toBe('280.13');
    expect(minorToMajor('5', 2)).toBe('0.05');
    expect(minorToMajor('0', 2)).toBe('0.00');
    expect(minorToMajor('-5', 2)).toBe('-0.05');
    expect(minorToMajor('-0', 2)).toBe('0.00');
    expect(minorToMajor('1234', 0)).toBe('1234');
    expect(minorToMajor('1234', 3)).toBe('1.234');
    expect(minorToMajor('9223372036854775807', 2)).toBe('92233720368547758.07');
    expect(minorToMajor('123456789012345678901234567890', 2)).toBe('1234567890123456789012345678.90');
    expect(majorUnits('223471', 'PLN')).toBe('2234.71');
    expect(majorUnits('1234', 'JPY')).toBe('1234');
    expect(majorUnits('1234', 'KWD')).toBe('1.234');
    expect(majorUnits('1234', 'XYZ')).toBeNull();
    expect(majorUnits('12.34', 'PLN')).toBeNull();
  });

  it('When any whole number of minor units is turned into major units, then reading it back gives the same number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: 0, max: 4 }), (n, digits) => {
        const major = minorToMajor(n.toString(), digits);
        expect(BigInt(major.replace('.', ''))).toBe(n);
        expect(major.split('.')[1]?.length ?? 0).toBe(digits);
      }),
    );
  });

  it('When amounts are shown for a locale, then they read as people write them', () => {
    expect(shown('223471', 'PLN')).toBe('2,234.71 PLN');
    expect(shown('28013', 'PLN')).toBe('280.13 PLN');
    expect(shown('223471', 'PLN', 'pl-PL')).toBe('2234,71 zł');
    expect(shown('22347100', 'PLN', 'pl-PL')).toBe('223 471,00 zł');
    expect(shown('223471', 'EUR')).toBe('€2,234.71');
    expect(shown('223471', 'EUR', 'de-DE')).toBe('2.234,71 €');
    expect(shown('1234', 'JPY', 'ja-JP')).toBe('￥1,234');
    expect(shown('1234', 'JPY')).toBe('JP¥1,234');
    expect(shown('1234', 'BHD')).toBe('1.234 BHD');
    expect(shown('1000', 'KWD')).toBe('1.000 KWD');
    expect(shown('0', 'PLN')).toBe('0.00 PLN');
    expect(shown('-28013', 'PLN')).toBe('-280.13 PLN');
  });

  it('When a value is larger than a number holds exactly, then it is shown to the last digit', () => {
    expect(shown('9223372036854775807', 'PLN')).toBe('92,233,720,368,547,758.07 PLN');
    expect(shown('123456789012345678901234567891', 'KWD')).toBe('123,456,789,012,345,678,901,234,567.891 KWD');
    expect(formatMoney('9007199254740993', 'JPY', 'en-GB')).toEqual({ exact: true, text: 'JP¥9,007,199,254,740,993' });
  });

  it('When any whole number is shown in any of a few locales, then its digits are exactly the minor units', () => {
    const locales = ['en-GB', 'pl-PL', 'de-CH', 'ar-EG', 'hi-IN', 'ja-JP'];
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
        fc.constantFrom('PLN', 'JPY', 'KWD', 'EUR', 'BHD'),
        fc.constantFrom(...locales),
        (n, currency, locale) => {
          const money = formatMoney(n.toString(), currency, locale);
          expect(money?.exact).toBe(true);
        },
      ),
    );
  });

  it('When an amount has no known currency or is not a whole number, then it is shown as received and marked', () => {
    expect(formatMoney('223471', 'XYZ', 'en-GB')).toEqual({
      exact: false,
      text: '223471 XYZ',
      why: 'in minor units; the currency XYZ is not one the console knows',
    });
    expect(formatMoney('223471', null, 'en-GB')).toEqual({
      exact: false,
      text: '223471',
      why: 'in minor units; no currency was given',
    });
    for (const garbage of ['12.5', '', ' 1', '1e5', '0x10', '--1', '١٢', 'NaN', '1'.repeat(401)])
      expect(formatMoney(garbage, 'PLN', 'en-GB')).toEqual({
        exact: false,
        text: `${garbage} PLN`,
        why: 'not a whole number of minor units',
      });
    expect(formatMoney(null, 'PLN', 'en-GB')).toBeNull();
  });

  it('When amounts are added and subtracted, then the result is exact whatever their size', () => {
    expect(sumMinor(['28013', '28013'])).toBe('56026');
    expect(sumMinor([])).toBe('0');
    expect(sumMinor(['9223372036854775807', '9223372036854775807'])).toBe('18446744073709551614');
    expect(sumMinor(['1', 'x'])).toBeNull();
    expect(subtractMinor('223471', '56026')).toBe('167445');
    expect(subtractMinor('0', '5')).toBe('-5');
    expect(subtractMinor('1.5', '5')).toBeNull();
    expect(shown(subtractMinor('223471', sumMinor(['28013', '28013']) ?? ''), 'PLN')).toBe('1,674.45 PLN');
  });
});
