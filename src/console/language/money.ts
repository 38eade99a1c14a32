/**
 * Amounts as people write them (pure). The payment service states every amount in minor units, as a string of
 * digits ("223471" PLN is 2,234.71 zł); a page shows it in major units with its currency, formatted for the
 * console's locale by `Intl.NumberFormat`, with the currency's own number of decimals (JPY none, PLN two, KWD
 * three). The arithmetic is on BigInt and decimal strings, never on floating point, and every formatted amount is
 * read back and compared with the minor units it came from: an amount that cannot be shown exactly (a currency
 * Intl does not know, a value that is not a whole number of minor units) is shown exactly as received, in minor
 * units, and marked so. Never rounded.
 */

/** An amount ready for a page. */
export type MoneyText =
  | { exact: true; text: string }
  /** Shown as received: `text` is the minor units and the currency code as they came, `why` says why. */
  | { exact: false; text: string; why: string };

/** The currencies Intl knows (ISO 4217 codes). A code outside it is formatted with a guess of two decimals: refused. */
let known: ReadonlySet<string> | null = null;
const knownCurrencies = (): ReadonlySet<string> => (known ??= new Set(Intl.supportedValuesOf('currency')));

const MINOR_UNITS = /^-?\d{1,400}$/;

/** The number of decimals of a currency (JPY 0, PLN 2, BHD 3), or null for a code Intl does not know. */
export function currencyDigits(currency: string): number | null {
  if (!knownCurrencies().has(currency)) return null;
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? null;
}

/** A decimal numeral as text ("-2234.71"): what Intl.NumberFormat formats exactly, however many digits. */
export type Decimal = `${number}`;

/**
 * Minor units as a decimal string in major units, with a dot: ("223471", 2) is "2234.71", ("-5", 2) "-0.05",
 * ("1234", 0) "1234". Exact for any length of digits.
 */
export function minorToMajor(minor: string, digits: number): Decimal {
  const negative = minor.startsWith('-');
  const value = BigInt(negative ? minor.slice(1) : minor);
  const scale = 10n ** BigInt(digits);
  const whole = (value / scale).toString();
  const fraction = digits === 0 ? '' : `.${(value % scale).toString().padStart(digits, '0')}`;
  // Digits, an optional minus and dot: a decimal numeral by construction.
  return `${negative && value !== 0n ? '-' : ''}${whole}${fraction}` as Decimal;
}

/** An amount in major units with a dot as the decimal separator (the finance export), or null when it has none. */
export function majorUnits(minor: string, currency: string): string | null {
  const digits = currencyDigits(currency);
  if (digits === null || !MINOR_UNITS.test(minor)) return null;
  return minorToMajor(minor, digits);
}

const formatters = new Map<string, { shown: Intl.NumberFormat; latin: Intl.NumberFormat }>();

function formattersFor(locale: string, currency: string, digits: number) {
  const key = `${locale}\u001f${currency}`;
  let found = formatters.get(key);
  if (found === undefined) {
    const options: Intl.NumberFormatOptions = {
      style: 'currency',
      currency,
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    };
    found = {
      shown: new Intl.NumberFormat(locale, options),
      // The same in Latin digits, to check the figure shown against the minor units whatever the locale's digits.
      latin: new Intl.NumberFormat(locale, { ...options, numberingSystem: 'latn' }),
    };
    formatters.set(key, found);
  }
  return found;
}

/** Whether the Latin-digit rendering states exactly these minor units (nothing rounded, nothing lost). */
function statesExactly(parts: Intl.NumberFormatPart[], minor: string): boolean {
  const digits = parts
    .filter((p) => p.type === 'integer' || p.type === 'fraction')
    .map((p) => p.value)
    .join('');
  const negative = parts.some((p) => p.type === 'minusSign');
  const unsigned = minor.replace(/^-/, '');
  return (
    /^\d+$/.test(digits) &&
    BigInt(digits) === BigInt(unsigned) &&
    (negative === minor.startsWith('-') || BigInt(unsigned) === 0n)
  );
}

/**
 * Intl's rendering, except that where the locale has no symbol of its own for the currency (Intl then writes the
 * code first: "PLN 2,234.71"), the code goes after the figure, as people write it: "2,234.71 PLN".
 */
function layout(parts: Intl.NumberFormatPart[], currency: string): string {
  const currencyPart = parts.find((p) => p.type === 'currency');
  if (currencyPart?.value !== currency) return parts.map((p) => p.value).join('');
  const at = parts.indexOf(currencyPart);
  const spacing = (index: number): boolean => parts[index]?.type === 'literal' && parts[index]?.value.trim() === '';
  const figure = parts
    .filter((_, index) => index !== at && !((index === at - 1 || index === at + 1) && spacing(index)))
    .map((p) => p.value)
    .join('');
  return `${figure}\u00a0${currency}`;
}

/**
 * An amount of `minor` units of `currency` for a page in `locale`: "2,234.71 PLN" (en-GB), "2234,71 zł" (pl-PL),
 * "¥1,234" (ja-JP); as received and marked when it cannot be shown exactly. Null when there is no amount.
 */
export function formatMoney(minor: string | null, currency: string | null, locale: string): MoneyText | null {
  if (minor === null) return null;
  const asReceived = (why: string): MoneyText => ({
    exact: false,
    text: `${minor}${currency ? ` ${currency}` : ''}`,
    why,
  });
  if (!MINOR_UNITS.test(minor)) return asReceived('not a whole number of minor units');
  if (currency === null || currency === '') return asReceived('in minor units; no currency was given');
  const digits = currencyDigits(currency);
  if (digits === null) return asReceived(`in minor units; the currency ${currency} is not one the console knows`);
  const major = minorToMajor(minor, digits);
  const { shown, latin } = formattersFor(locale, currency, digits);
  // A decimal string is formatted exactly (Intl.NumberFormat v3); the check below proves it on this runtime.
  if (!statesExactly(latin.formatToParts(major), minor))
    return asReceived('in minor units; it cannot be shown exactly in major units');
  return { exact: true, text: layout(shown.formatToParts(major), currency) };
}

/** The sum of amounts in minor units, exactly (BigInt); null when one is not a whole number of minor units. */
export function sumMinor(amounts: readonly string[]): string | null {
  let total = 0n;
  for (const amount of amounts) {
    if (!MINOR_UNITS.test(amount)) return null;
    total += BigInt(amount);
  }
  return total.toString();
}

/** `a - b` in minor units, exactly; null when either is not a whole number of minor units. */
export function subtractMinor(a: string, b: string): string | null {
  if (!MINOR_UNITS.test(a) || !MINOR_UNITS.test(b)) return null;
  return (BigInt(a) - BigInt(b)).toString();
}
