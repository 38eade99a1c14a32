// TypeScript types for the payment events, generated from the AsyncAPI document (docs/EVENTS.md, "Contracts"):
//
//   npm install --save-dev --save-exact json-schema-to-typescript@16.0.0 yaml@2.9.1
//   node generate-event-types.mjs asyncapi.yaml > src/paymentEvents.ts
//
// Every message's payload schema becomes a named type (OrderCompletedEvent, RefundFinalizedEvent, ...), and
// PaymentEvent is their union, discriminated by `type` (the routing key). The types name the fields of this
// version only: fields a later 1.x adds are in the messages, untyped (docs/EVENTS.md, "Compatibility"). The
// versions above are the ones this repository tests the output with (test/contracts/contracts.test.ts).
//
// With --schemas it writes instead the payload schemas as one JSON Schema document (2020-12) for a validator,
// as published (open: they accept the fields a later 1.x adds), with each routing key's schema named:
//
//   node generate-event-types.mjs --schemas asyncapi.yaml > src/paymentEventSchemas.json
import { readFileSync } from 'node:fs';
import { compile } from 'json-schema-to-typescript';
import { parse } from 'yaml';

const args = process.argv.slice(2);
const schemasOnly = args.includes('--schemas');
const [file = 'asyncapi.yaml'] = args.filter((a) => a !== '--schemas');
const asyncapi = parse(readFileSync(file, 'utf8'));

if (schemasOnly) {
  const ref = (name) => `#/$defs/${name}`;
  const relocate = (value) =>
    Array.isArray(value)
      ? value.map(relocate)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value).map(([k, v]) => [
              k,
              k === '$ref' && typeof v === 'string' ? ref(v.replace('#/components/schemas/', '')) : relocate(v),
            ]),
          )
        : value;
  const byType = {};
  for (const channel of Object.values(asyncapi.channels)) {
    for (const message of Object.values(channel.messages)) {
      const name = message.$ref.replace('#/components/messages/', '');
      byType[channel.address] = asyncapi.components.messages[name].payload.$ref.replace('#/components/schemas/', '');
    }
  }
  const { AmqpProperties: _amqp, ...payloadSchemas } = asyncapi.components.schemas;
  const document = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $comment: `Generated from ${file} (version ${asyncapi.info.version}) by generate-event-types.mjs: do not edit by hand.`,
    version: asyncapi.info.version,
    byType,
    $defs: relocate(payloadSchemas),
  };
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
} else {
  const schema = {
    title: 'PaymentEvent',
    anyOf: Object.values(asyncapi.components.messages).map((message) => message.payload),
    // The payloads refer to #/components/schemas/...: keep that path valid from this root.
    components: { schemas: asyncapi.components.schemas },
  };
  const types = await compile(schema, 'PaymentEvent', {
    bannerComment: `/* Generated from ${file} by generate-event-types.mjs: do not edit by hand. */`,
    additionalProperties: false,
  });
  process.stdout.write(types);
}
