/**
 * Which order and refund ids may enter a path or a query (the admin API, the command line, the payment-API
 * client): pure. The payment service's ids are short runs of letters and digits; anything that could change the
 * meaning of a URL path (`.` and `..` are dot-segments, `/` another level) or of a log line (control characters),
 * or of what a person reads (invisible and bidirectional format characters), or is longer than any id, is refused
 * before it reaches a database or the API.
 */

export const MAX_ID_LENGTH = 128;

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Unicode's format characters (category Cf): the zero-width ones (U+200B-U+200D, U+2060, U+FEFF) make `ORDER1`
 * and `ORDER1` + U+200B look alike in every list, and the bidirectional ones (U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069) reorder the text around them (U+202E reverses it). No id has a reason to hold one.
 */
const FORMAT = /\p{Cf}/u;

/** Whether a value holds a control character (C0, DEL or C1): NUL, a line break, an escape. */
export const hasControlCharacter = (value: string): boolean => CONTROL.test(value);

/** Whether a value holds an invisible or bidirectional format character. */
export const hasFormatCharacter = (value: string): boolean => FORMAT.test(value);

/** Why `id` cannot be an order or refund id, naming the rule and never the value; null when it can. */
export function idProblem(id: string): string | null {
  if (id === '') return 'the id is empty';
  if (id.length > MAX_ID_LENGTH) return `the id is longer than ${MAX_ID_LENGTH} characters`;
  if (id === '.' || id === '..') return 'the id is a dot segment ("." or "..")';
  if (id.includes('/')) return 'the id contains "/"';
  if (CONTROL.test(id)) return 'the id contains a control character';
  if (FORMAT.test(id)) return 'the id contains an invisible or bidirectional format character';
  return null;
}
