/**
 * The readable view of a raw body (pure): pretty JSON when it is JSON, the text otherwise; for a viewer not
 * allowed the buyer's personal data, with those fields redacted.
 */

/** Fields that hold a buyer's personal data (spec, "Buyer"), wherever they appear in a body. */
const PERSONAL_KEYS = new Set([
  'buyer',
  'customerIp',
  'email',
  'phone',
  'firstName',
  'lastName',
  'delivery',
  'invoice',
  'cardNumberMasked',
  'cardData',
]);

export const REDACTED = '[redacted: personal data]';

function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, PERSONAL_KEYS.has(key) ? REDACTED : redact(inner)]),
    );
  return value;
}

/** What a person may read of a body: `raw` only when personal data may be shown. */
export function readableBody(body: Buffer, personalData: boolean): { readable: string; raw: string | null } {
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: without the right to personal data, nothing of it can be shown safely.
    return personalData ? { readable: text, raw: text } : { readable: REDACTED, raw: null };
  }
  return personalData
    ? { readable: JSON.stringify(parsed, null, 2), raw: text }
    : { readable: JSON.stringify(redact(parsed), null, 2), raw: null };
}
