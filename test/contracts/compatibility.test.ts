/**
 * The compatibility policy, enforced (docs/EVENTS.md, "Compatibility"): docs/asyncapi.yaml may only add to every
 * released version of its major version, frozen in test/contracts/released/ (a consumer was written against each);
 * and the check itself catches each kind of breaking change.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ASYNCAPI_DOCUMENT } from '../support/contracts';
import { breakingChanges } from './compatibility';

type JsonObject = { [key: string]: unknown };

const RELEASED = path.join(__dirname, 'released');
const load = (file: string): JsonObject => parse(readFileSync(file, 'utf8')) as JsonObject;
const versionOf = (document: JsonObject): string => (document.info as { version: string }).version;
const major = (version: string): string => version.split('.')[0] ?? '';
const compare = (a: string, b: string): number => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if ((x?.[i] ?? 0) !== (y?.[i] ?? 0)) return (x?.[i] ?? 0) - (y?.[i] ?? 0);
  return 0;
};

const current = load(ASYNCAPI_DOCUMENT);
const released = readdirSync(RELEASED)
  .filter((f) => /^asyncapi-\d+\.\d+\.\d+\.yaml$/.test(f))
  .map((f) => ({ file: f, document: load(path.join(RELEASED, f)) }));

describe('docs/asyncapi.yaml against the released versions', () => {
  it('When it is compared with every released version of its major version, then it only adds to them', () => {
    const sameMajor = released.filter((r) => major(versionOf(r.document)) === major(versionOf(current)));
    expect(sameMajor.length).toBeGreaterThan(0);
    for (const { file, document } of sameMajor)
      expect({ file, breaking: breakingChanges(document, current) }).toEqual({ file, breaking: [] });
  });

  it('When a version was released, then the document says a version at least as late, and its file name says it', () => {
    for (const { file, document } of released) {
      expect(file).toBe(`asyncapi-${versionOf(document)}.yaml`);
      expect(compare(versionOf(current), versionOf(document))).toBeGreaterThanOrEqual(0);
    }
  });

  it('When the events name their schema, then dataschema names the major version of the document', () => {
    const envelope = (current.components as { schemas: Record<string, { properties: Record<string, unknown> }> })
      .schemas.EventEnvelope;
    expect(JSON.stringify(envelope?.properties.dataschema)).toContain(':v[1-9]');
    expect(readFileSync(ASYNCAPI_DOCUMENT, 'utf8')).toContain(
      `urn:payment-notification-receiver:events:v${major(versionOf(current))}:order`,
    );
  });
});

describe('the compatibility check', () => {
  const base = (): JsonObject => structuredClone(current);
  type Schema = JsonObject & { properties: Record<string, JsonObject>; required?: string[] };
  type Schemas = Record<string, JsonObject>;
  const schemas = (document: JsonObject): Schemas => (document.components as { schemas: Schemas }).schemas;
  const orderData = (document: JsonObject) => schemas(document).OrderEventData as Schema;

  it.each<[string, (document: JsonObject) => void]>([
    ['a field added to data', (d) => (orderData(d).properties.captureBy = { type: 'string' })],
    [
      'a field added to data and required',
      (d) => {
        orderData(d).properties.captureBy = { type: 'string' };
        orderData(d).required?.push('captureBy');
      },
    ],
    [
      'an attribute added to the envelope',
      (d) => ((schemas(d).EventEnvelope as Schema).properties.traceparent = { type: 'string' }),
    ],
    [
      'a new event type',
      (d) =>
        ((d.channels as Record<string, unknown>).orderExpired = {
          address: 'order.expired',
          messages: { orderExpired: { $ref: '#/components/messages/orderPending' } },
        }),
    ],
    [
      'a description reworded',
      (d) => (orderData(d).properties.sequence = { ...orderData(d).properties.sequence, description: 'n' }),
    ],
    ['a value set narrowed', (d) => (schemas(d).OrderStatus = { type: 'string', enum: ['PENDING', 'COMPLETED'] })],
  ])('When the document changes by %s, then nothing breaks', (_what, change) => {
    const changed = base();
    change(changed);
    expect(breakingChanges(current, changed)).toEqual([]);
  });

  it.each<[string, (document: JsonObject) => void, RegExp]>([
    [
      'removing a field consumers get',
      (d) => {
        delete orderData(d).properties.paymentId;
        orderData(d).required = orderData(d).required?.filter((f) => f !== 'paymentId');
      },
      /paymentId: no longer always present/,
    ],
    [
      'a field no longer described',
      (d) => delete orderData(d).properties.payMethodType,
      /payMethodType: may now be any/,
    ],
    [
      'no longer sending a required field',
      (d) => (orderData(d).required = orderData(d).required?.filter((f) => f !== 'sequence')),
      /sequence: no longer always present/,
    ],
    [
      'renaming a field',
      (d) => {
        const data = orderData(d);
        data.properties.seq = data.properties.sequence as JsonObject;
        delete data.properties.sequence;
        data.required = data.required?.map((f) => (f === 'sequence' ? 'seq' : f));
      },
      /sequence/,
    ],
    ['changing a type', (d) => (orderData(d).properties.sequence = { type: 'string' }), /sequence: may now be string/],
    [
      'making a field nullable',
      (d) => (orderData(d).properties.orderId = { type: ['string', 'null'], minLength: 1 }),
      /orderId: may now be null/,
    ],
    [
      'a new value of an enumeration',
      (d) =>
        (schemas(d).OrderStatus = {
          type: 'string',
          enum: ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'CANCELED', 'REFUNDED'],
        }),
      /status: may now take values outside/,
    ],
    [
      'another pattern for amounts',
      (d) => (schemas(d).Amount = { type: 'string', pattern: '^[0-9.]+$' }),
      /totalAmount: its pattern changed/,
    ],
    [
      'another schema version',
      (d) =>
        ((schemas(d).OrderCompletedEvent as Schema).properties.dataschema = {
          const: 'urn:payment-notification-receiver:events:v2:order',
        }),
      /dataschema: was always/,
    ],
    [
      'removing an event type',
      (d) => delete (d.channels as Record<string, unknown>).orderCanceled,
      /order.canceled: the channel is gone/,
    ],
    [
      'a lower minimum',
      (d) => (orderData(d).properties.sequence = { type: 'integer', minimum: 0 }),
      /sequence: its minimum went below 1/,
    ],
    [
      'an AMQP property no longer set',
      (d) => {
        const amqp = schemas(d).AmqpProperties as Schema;
        amqp.required = amqp.required?.filter((p) => p !== 'timestamp');
      },
      /properties.timestamp: no longer always present/,
    ],
  ])('When the document changes by %s, then the check says it breaks consumers', (_what, change, problem) => {
    const changed = base();
    change(changed);
    const problems = breakingChanges(current, changed);
    expect(problems).not.toEqual([]);
    expect(problems.join('\n')).toMatch(problem);
  });
});
