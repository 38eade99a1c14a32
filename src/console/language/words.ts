import type { DeliveryOutcome, StatusTransition } from '../../domain/outcomes';
import type { CheckResult } from '../../observability/reconciliationMetrics';

/**
 * The console's words (pure): what each status, outcome, result and field is called on a page, in a support agent's
 * words, and what it means. Every page takes its words from here, and the glossary page explains each of them, so
 * a word a page uses is always one the glossary explains (test/unit/console/language/words.test.ts). The field names the
 * payment service and the shop use (extOrderId, PAYMENT_ID) stay beside the words, for when a customer or an
 * engineer quotes them.
 */

/** A status, for the person who paid and for the shop. */
export interface StatusWords {
  /** What a page calls it: "Paid". */
  label: string;
  customer: string;
  shop: string;
}

export const ORDER_STATUS_WORDS: Readonly<Record<string, StatusWords>> = {
  NEW: {
    label: 'Created',
    customer: 'The order exists at the payment service, but the customer has not started paying.',
    shop: 'Nothing to do. Only seen when the service asks the payment service about an order.',
  },
  PENDING: {
    label: 'Payment in progress',
    customer:
      'The customer started paying (at their bank, card or wallet) and it has not finished. No money has been taken yet.',
    shop: 'Do not ship yet. Most payments finish within minutes; one left like this for days was usually abandoned, and the payment service cancels it.',
  },
  WAITING_FOR_CONFIRMATION: {
    label: 'Waiting for the shop’s confirmation',
    customer:
      'The payment is authorised: the money is reserved on the customer’s account but not taken yet. It is taken when the shop confirms.',
    shop: 'The shop must confirm (capture) or cancel it in the payment service’s panel. If nobody does before the deadline, the payment service cancels it and the customer’s money is released.',
  },
  COMPLETED: {
    label: 'Paid',
    customer: 'The customer has paid: the money was taken.',
    shop: 'The money is in the shop’s balance at the payment service. The order can be shipped.',
  },
  CANCELED: {
    label: 'Canceled',
    customer: 'The customer was not charged; money reserved for it is released.',
    shop: 'Do not ship. A new order is needed if the customer still wants to buy.',
  },
};

export const REFUND_STATUS_WORDS: Readonly<Record<string, StatusWords>> = {
  PENDING: {
    label: 'Refund in progress',
    customer: 'The refund was accepted and is being processed; the money has not been sent back yet.',
    shop: 'Nothing to do; it usually becomes Refunded within a day.',
  },
  FINALIZED: {
    label: 'Refunded',
    customer:
      'The money was sent back to the card or account the customer paid from. Their bank may take a few working days to show it.',
    shop: 'The amount was taken from the shop’s balance at the payment service.',
  },
  CANCELED: {
    label: 'Refund canceled',
    customer: 'No money goes back for this refund.',
    shop: 'It was canceled in the payment service’s panel or could not be made; make a new refund if one is still owed.',
  },
};

const unknownStatus = (status: string): StatusWords => ({
  label: status,
  customer: 'A status the payment service did not describe.',
  shop: 'Ask an engineer.',
});

export const orderStatusWords = (status: string): StatusWords => ORDER_STATUS_WORDS[status] ?? unknownStatus(status);
export const refundStatusWords = (status: string): StatusWords => REFUND_STATUS_WORDS[status] ?? unknownStatus(status);

/** A word of the console, with what it means; `id` is its anchor on the glossary page. */
export interface Word {
  id: string;
  label: string;
  meaning: string;
}

/** What the service answered a delivery: how the recent deliveries and an order's timeline say it. */
export const DELIVERY_OUTCOME_WORDS: Readonly<Record<DeliveryOutcome, Word>> = {
  accepted: {
    id: 'recorded',
    label: 'recorded',
    meaning: 'A status the service had not seen before: it was recorded and the order or refund moved to it.',
  },
  duplicate: {
    id: 'received-twice',
    label: 'received twice',
    meaning:
      'The payment service sent a notification the service already had (it sends again until it hears back, sometimes twice anyway). Nothing changed.',
  },
  stale: {
    id: 'arrived-late',
    label: 'arrived after a later status and was ignored',
    meaning:
      'A status older than the one the order already has (PENDING after Paid, say): notifications can arrive out of order. It was kept for the record and changed nothing.',
  },
  conflict: {
    id: 'contradiction',
    label: 'contradicts a final status',
    meaning:
      'A final status after another final one (Canceled after Paid, say). The first is kept; the second is kept for the record and shown under Needs attention, because someone should find out which is true.',
  },
  quarantined: {
    id: 'set-aside',
    label: 'could not be read, set aside',
    meaning:
      'A genuine notification (its signature is right) that the service could not read. It is kept apart, answered so that the payment service does not send it again, and listed under Needs attention; an operator can retry it.',
  },
};

/** What recording a status did to its order or refund (the timeline, the refunds table). */
export const TRANSITION_WORDS: Readonly<Record<StatusTransition, Word>> = {
  applied: { id: 'recorded', label: 'changed the status', meaning: DELIVERY_OUTCOME_WORDS.accepted.meaning },
  stale: {
    id: 'arrived-late',
    label: 'arrived after a later status and was ignored',
    meaning: DELIVERY_OUTCOME_WORDS.stale.meaning,
  },
  conflict: {
    id: 'contradiction',
    label: 'contradicts a final status; the first was kept',
    meaning: DELIVERY_OUTCOME_WORDS.conflict.meaning,
  },
};

/** A status the journal gave back after a database failover lost it. */
export const RESTORED_WORD: Word = {
  id: 'restored',
  label: 'restored after a database failover',
  meaning:
    'The database switched to its standby copy, which had missed the last seconds. The service keeps a short journal of every notification it received outside the database, and recorded this one again from it: the notification did arrive from the payment service, and nothing about it changed.',
};

/** A status learnt by asking the payment service, not from a notification. */
export const LEARNT_WORD: Word = {
  id: 'learnt',
  label: 'learnt from the payment service because its notification never came',
  meaning:
    'When an order stays unfinished, the service asks the payment service for its status (a check). A status learnt that way was never delivered as a notification; it is recorded like one and marked so.',
};

/** The ids people hold, each with the field name the payment service and the shop use. */
export const FIELD_WORDS = {
  orderId: { id: 'order-id', label: 'order id', field: 'orderId', meaning: 'The payment service’s id of the order.' },
  extOrderId: {
    id: 'shop-reference',
    label: 'shop reference',
    field: 'extOrderId',
    meaning:
      'The shop’s own order number, as the shop gave it to the payment service: what a customer finds in their order confirmation. Several attempts to pay one order can share it.',
  },
  paymentId: {
    id: 'payment-id',
    label: 'payment id',
    field: 'PAYMENT_ID',
    meaning: 'The payment’s number at the payment service: what a customer sees on a bank statement (Trans ID).',
  },
  refundId: {
    id: 'refund-id',
    label: 'refund id',
    field: 'refundId',
    meaning: 'The payment service’s id of a refund.',
  },
  extRefundId: {
    id: 'shop-refund-reference',
    label: 'shop’s refund reference',
    field: 'extRefundId',
    meaning: 'The shop’s own number for a refund.',
  },
  reason: {
    id: 'refund-reason',
    label: 'reason',
    field: 'reason, reasonDescription',
    meaning:
      'Why a refund was made, or why it was rejected ("refund rejected by the bank"), in the payment service’s words: not personal data, so every role sees it, and it may be told to the customer.',
  },
  posId: {
    id: 'shop-account',
    label: 'shop account',
    field: 'POS',
    meaning:
      'The shop’s account (point of sale) at the payment service that the order belongs to. A shop may have several, one per website or country.',
  },
} as const satisfies Record<string, Word & { field: string }>;

export type FieldName = keyof typeof FIELD_WORDS;

/** How a check with the payment service ended, for the reconciliation box, the audit and action results. */
export const CHECK_RESULT_WORDS: Readonly<Record<CheckResult, string>> = {
  unchanged: 'the payment service said nothing new',
  repaired: 'learnt a status whose notification never came',
  pos_mismatch: 'the payment service says the order belongs to another shop account; nothing was taken from it',
  not_found: 'the payment service does not know this order',
  forbidden: 'the payment service refused to tell (the order belongs to another shop account)',
  unauthorized: 'the payment service refused the shop account’s credentials',
  unavailable: 'could not reach the payment service',
  invalid_answer: 'the payment service’s answer could not be read',
  no_credentials: 'no credentials for the order’s shop account are set up',
  invalid_order_id: 'the order id cannot be asked about',
  cancelled: 'stopped before an answer came',
};

export const checkResultWords = (result: string): string =>
  (CHECK_RESULT_WORDS as Readonly<Record<string, string>>)[result] ?? result.replace(/_/g, ' ');

/** Why a notification could not be read (quarantine reasons). */
export const QUARANTINE_REASON_WORDS: Readonly<Record<string, string>> = {
  invalid_utf8: 'its text is not valid UTF-8',
  not_json: 'it is not JSON',
  too_deep: 'it is nested too deeply to be read safely',
  unknown_shape: 'it is neither an order nor a refund notification',
  invalid_field: 'a field holds a value the service does not accept',
  unrecordable: 'recording it failed every time it was tried',
};

export const quarantineReasonWords = (reason: string): string =>
  QUARANTINE_REASON_WORDS[reason] ?? reason.replace(/_/g, ' ');

/** Other words the pages use. */
export const TERMS: readonly Word[] = [
  {
    id: 'notification',
    label: 'notification',
    meaning:
      'A message the payment service sends the shop each time a payment or refund changes status. The service receives them, checks they are genuine and records them.',
  },
  {
    id: 'delivery',
    label: 'delivery',
    meaning:
      'One arrival of a notification. The payment service sends each one until it hears back, so one notification can have several deliveries.',
  },
  {
    id: 'check',
    label: 'check with the payment service (reconciliation)',
    meaning:
      'The service asks the payment service for the status of an order that stays unfinished, first a few minutes after its last news, then less and less often, for a week (RECONCILE_GIVE_UP). An operator can also check an order at once.',
  },
  {
    id: 'given-up',
    label: 'checks given up',
    meaning:
      'An order still unfinished after a week of checks: the service stops asking. It is listed under Needs attention; a person should look at it in the payment service’s panel.',
  },
  {
    id: 'events',
    label: 'events for other services',
    meaning:
      'For each status recorded, the service tells the shop’s other systems (stock, shipping, accounting) through a message broker. An event waiting for the broker means they do not know yet.',
  },
  {
    id: 'disagreement',
    label: 'disagreement',
    meaning:
      'A notification that states a fact otherwise than the first one did (another amount or shop reference for the same order). The first is kept; the other is shown on the order’s page.',
  },
  {
    id: 'raw-body',
    label: 'what was received',
    meaning:
      'The notification exactly as the payment service sent it, or the payment service’s answer to a check. For viewers the customer’s personal data (name, e-mail, address, phone) is hidden.',
  },
  {
    id: 'signing-key',
    label: 'signing key',
    meaning:
      'Each notification is signed by the payment service with the shop account’s key; the service checks the signature. A page shows a short fingerprint of the key, never the key.',
  },
  {
    id: 'roles',
    label: 'viewer and operator',
    meaning:
      'A viewer (support) reads everything but the customer’s personal data, unless CONSOLE_VIEWERS_SEE_PERSONAL_DATA allows it. An operator also sees it, and can act: check an order now, send its events again, retry a notification set aside.',
  },
  {
    id: 'audit',
    label: 'audit',
    meaning:
      'Every sign-in and every action, in the console, through the admin API or on the command line, with who did it (a person, admin, a downstream team as role team, or the command line’s user), from where, and how it ended. An action is recorded as started before it acts; one that stays started stopped halfway.',
  },
];

/** What each setting a page names does, in a sentence. */
export const SETTING_WORDS: Readonly<Record<string, string>> = {
  FAILOVER_RECONCILE_WINDOW:
    'After a database failover, how far back before the switch orders are checked with the payment service.',
  CONSOLE_QUIET_AFTER: 'How long without any notification before Needs attention says the payment service is silent.',
  CONSOLE_TIME_ZONE: 'The time zone every time in the console is shown in, and filters are read in.',
  CONSOLE_LOCALE: 'How the console writes amounts and dates.',
  CONSOLE_CONFIRM_WITHIN:
    'How long the shop has to confirm a payment waiting for its confirmation before the payment service cancels it (set per pay method in the payment service’s panel).',
  ALLOWED_SOURCE_IPS: 'The addresses the payment service’s notifications may come from; any other is refused.',
  EXPECTED_UNROUTED_EVENT_TYPES:
    'The kinds of events no other service is meant to take: when none takes them, that is normal, and the board says so.',
  CONSOLE_VIEWERS_SEE_PERSONAL_DATA: 'Whether viewers see the customer’s personal data in what was received.',
  BODY_RETENTION:
    'How long what was received is kept; after it, the customer’s personal data is deleted with it, and only the statuses remain.',
  OUTBOX_RETENTION: 'How long events already passed on to other services are kept (and can be sent again).',
  HISTORY_RETENTION: 'How long notifications and deliveries are kept; orders and their statuses are kept for ever.',
  RECONCILE_AFTER: 'How long after an order’s last news the first check with the payment service comes.',
  RECONCILE_GIVE_UP: 'How long checks go on for an order that stays unfinished.',
  PAYMENT_API_URL: 'The payment service’s address for checks; without it, nothing is ever checked.',
  PAYMENT_API_CREDENTIALS:
    'The client id and secret of each shop account that checks ask the payment service with (from its panel).',
  PAYMENT_API_TIMEOUT: 'How long one question to the payment service may take before it counts as timed out.',
};

/** What the audit's actions are called. */
export const AUDIT_ACTION_WORDS: Readonly<Record<string, string>> = {
  sign_in: 'signed in',
  sign_out: 'signed out',
  reconcile: 'checked the order with the payment service',
  orders_expected: 'told the service of orders the shop created',
  republish: 'sent the order’s events again',
  quarantine_retry: 'retried a notification set aside',
  quarantine_retry_all: 'retried the notifications set aside',
  end_sessions: 'ended a person’s sessions',
  events_replay: 'sent events again',
  events_rebuild: 'rebuilt events from history into the outbox',
  reproject: 'rebuilt the orders from their history',
  purge: 'deleted data past its retention',
  history_seed: 'filled the database with a made-up history (for tests)',
};

export const auditActionWords = (action: string): string => AUDIT_ACTION_WORDS[action] ?? action.replace(/_/g, ' ');

/** How the customer paid (payMethod.type of a notification; spec, "Order"). */
export const PAY_METHOD_WORDS: Readonly<Record<string, string>> = {
  PBL: 'bank transfer',
  CARD_TOKEN: 'card (or a wallet holding one)',
  INSTALLMENTS: 'instalments',
  BLIK_TOKEN: 'mobile code',
  PAYMENT_WALL: 'chosen on the payment page',
  TRANSPARENT: 'QR code transfer',
};
