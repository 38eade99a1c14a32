import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { PaymentEvent } from './paymentEvents';
import schemas from './paymentEventSchemas.json';

/**
 * Checks a message against the schemas published with the events (paymentEventSchemas.json, generated from
 * docs/asyncapi.yaml), as they are: open, so an event with fields a later 1.x added still passes, while one that
 * lacks a field, carries a value its schema does not allow, or names another major version in `dataschema` fails.
 * An event without `dataschema` (recorded before 1.1.0, still in the outbox or the feed) is read as 1.0: the v1
 * schema of its type, which is what it was published under.
 */

export type Checked =
  | { outcome: 'valid'; event: PaymentEvent }
  /** A routing key this version does not know: a type added later. Ack it, count it, do not fail on it. */
  | { outcome: 'unknown_type'; type: string }
  /** Not an event of this contract: a poison message, for the dead-letter queue. */
  | { outcome: 'invalid'; problems: string[] };

const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true });
addFormats(ajv);
const { byType, $defs } = schemas;
ajv.addSchema({ $id: 'payment-events', $defs });

const validators = new Map<string, ValidateFunction<PaymentEvent>>(
  Object.entries(byType).map(([type, name]) => [
    type,
    ajv.compile<PaymentEvent>({ $ref: `payment-events#/$defs/${name}` }),
  ]),
);

/** The contract version the schemas are of (docs/asyncapi.yaml's info.version). */
export const CONTRACT_VERSION: string = schemas.version;

export function checkEvent(routingKey: string, body: Buffer): Checked {
  const validate = validators.get(routingKey);
  if (!validate) return { outcome: 'unknown_type', type: routingKey };
  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    return { outcome: 'invalid', problems: ['the body is not JSON'] };
  }
  if (isObject(event) && !('dataschema' in event)) event = { ...event, dataschema: v1Schema(routingKey) };
  if (!validate(event))
    return {
      outcome: 'invalid',
      problems: (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`),
    };
  if (event.type !== routingKey) return { outcome: 'invalid', problems: [`type ${event.type} under ${routingKey}`] };
  return { outcome: 'valid', event };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `dataschema` 1.0 events went without: v1 of the order or refund schema, by the routing key. */
function v1Schema(routingKey: string): string {
  return `urn:payment-notification-receiver:events:v1:${routingKey.startsWith('refund.') ? 'refund' : 'order'}`;
}
