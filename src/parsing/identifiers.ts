/**
 * Which order and refund ids may enter a path or a query (the admin API, the command line, the payment-API
 * client): pure. The payment service's ids are short runs of letters and digits; anything that could change the
 * meaning of a URL path (`.` and `..` are dot-segments, `/` another level) or of a log line (control characters),
 * or is longer than any id, is refused before it reaches a database or the API.
 */

export const MAX_ID_LENGTH = 128;

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `id` cannot be an order or refund id, naming the rule and never the value; null when it can. */
export function idProblem(id: string): string | null {
  if (id === '') return 'the id is empty';
  if (id.length > MAX_ID_LENGTH) return `the id is longer than ${MAX_ID_LENGTH} characters`;
  if (id === '.' || id === '..') return 'the id is a dot segment ("." or "..")';
  if (id.includes('/')) return 'the id contains "/"';
  if (CONTROL.test(id)) return 'the id contains a control character';
  return null;
}
