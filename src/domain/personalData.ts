/**
 * The one personal-data rule (pure): what a reader without the right to personal data may read of a notification
 * body. An allowlist, not a list of what to hide: the ids, amounts, currencies, statuses, dates and the pay
 * method's type the spec defines ("Order status notification", "Refund status notification") are shown; the
 * value of every other field, a field unknown today included, is redacted. The console (for viewers), `inspect
 * --show-bodies` and anything else that prints a body read it through here.
 */

export const REDACTED = '[redacted: personal data]';

/**
 * The fields shown, by their path in the body (`[]`: every item of an array), each with why it is not personal
 * data. Every other field is redacted; those the spec defines are listed in NOT_SHOWN with why they are.
 */
const SHOWN_WHY: ReadonlyMap<string, string> = new Map([
  // An order status notification.
  ['order.orderId', "the payment service's id of the order: names no person"],
  ['order.extOrderId', "the shop's own order number: names no person"],
  ['order.orderCreateDate', 'when the order was made'],
  ['order.merchantPosId', "the shop's point of sale"],
  ['order.currencyCode', 'a currency'],
  ['order.totalAmount', 'an amount'],
  ['order.status', "the payment service's status"],
  ['order.payMethod.type', 'the kind of pay method (card, bank transfer), not which card or account'],
  ['order.payMethod.amount', 'an amount'],
  ['localReceiptDateTime', 'when the money reached the shop'],
  ['properties[].name', "a property's name; only PAYMENT_ID's value is shown (SHOWN_PROPERTIES)"],
  // A refund status notification.
  ['orderId', "the payment service's id of the order"],
  ['extOrderId', "the shop's own order number"],
  ['refund.refundId', "the payment service's id of the refund"],
  ['refund.extRefundId', "the shop's own refund reference"],
  ['refund.amount', 'an amount'],
  ['refund.currencyCode', 'a currency'],
  ['refund.status', "the payment service's status"],
  ['refund.statusDateTime', 'when the status changed'],
  ['refund.refundDate', 'when the refund was made'],
  [
    'refund.reason',
    'the payment service\'s words for why the refund was made or rejected ("refund rejected by the bank"), ' +
      'what the customer asks about: not personal data',
  ],
  [
    'refund.reasonDescription',
    "the payment service's (or the shop's) description of the reason, given when the refund was asked for: " +
      'shown like the reason. The shop must not write personal data into it',
  ],
]);

/** The fields the spec defines that are personal data, and why: redacted (as is any field not in SHOWN_WHY). */
export const NOT_SHOWN_WHY: ReadonlyMap<string, string> = new Map([
  ['order.buyer', "the customer's name, e-mail, phone, language and address"],
  ['order.payMethod.card', "the customer's card: its number's digits, expiry and the bank that issued it"],
  ['order.description', "the shop's text about the order: may name the customer or what they bought"],
  ['order.products', 'what the customer bought'],
  ['order.customerIp', "the customer's network address"],
  ['properties[].value', "a property's value, PAYMENT_ID's excepted: unknown, so treated as personal"],
]);

/** The paths of the fields shown. */
const SHOWN = new Set(SHOWN_WHY.keys());

/** Why a field (by its path) is shown, or null when it is redacted. */
export const whyShown = (path: string): string | null => SHOWN_WHY.get(path) ?? null;

/** Properties (`properties[]`, `{ name, value }`) whose value is shown: the payment's id. */
const SHOWN_PROPERTIES = new Set(['PAYMENT_ID']);

/** The paths that lead to a shown field: what is walked into rather than redacted whole. */
const ON_THE_WAY = new Set(
  [...SHOWN].flatMap((shown) => {
    const parts = shown.split('.');
    return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function redactAt(value: unknown, path: string): unknown {
  if (SHOWN.has(path)) return isObject(value) || Array.isArray(value) ? REDACTED : value;
  if (Array.isArray(value) && ON_THE_WAY.has(`${path}[]`)) return value.map((item) => redactAt(item, `${path}[]`));
  if (isObject(value) && ON_THE_WAY.has(path)) {
    const shownProperty = path === 'properties[]' && typeof value.name === 'string' && SHOWN_PROPERTIES.has(value.name);
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        shownProperty && key === 'value' && typeof inner === 'string' ? inner : redactAt(inner, `${path}.${key}`),
      ]),
    );
  }
  return REDACTED;
}

/** A body's JSON as a reader without personal-data rights sees it: the allowlisted fields, every other value redacted. */
export function redactPersonalData(json: unknown): unknown {
  if (!isObject(json)) return REDACTED;
  return Object.fromEntries(Object.entries(json).map(([key, value]) => [key, redactAt(value, key)]));
}

/** A body's JSON, or null when it is not JSON (UTF-8). */
function parsedBody(body: Buffer): { json: unknown } | null {
  try {
    return { json: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) };
  } catch {
    return null;
  }
}

/**
 * What a person may read of a body: `readable`, pretty JSON (the text as it is when not JSON), redacted unless
 * `personalData`; `raw`, the bytes as text, only with `personalData`. A body that is not JSON shows nothing
 * without the right: nothing of it can be told apart.
 */
export function readableBody(
  body: Buffer,
  { personalData }: { personalData: boolean },
): {
  readable: string;
  raw: string | null;
} {
  const parsed = parsedBody(body);
  if (personalData) {
    const text = body.toString('utf8');
    return { readable: parsed ? JSON.stringify(parsed.json, null, 2) : text, raw: text };
  }
  return { readable: parsed ? JSON.stringify(redactPersonalData(parsed.json), null, 2) : REDACTED, raw: null };
}

/** A body on one line as a reader without personal-data rights sees it (the command line's `--show-bodies`). */
export function redactedLine(body: Buffer): string {
  const parsed = parsedBody(body);
  return parsed ? JSON.stringify(redactPersonalData(parsed.json)) : `(${body.length} bytes, not JSON: not shown)`;
}
