// TypeScript types for the payment events, generated from the AsyncAPI document (docs/EVENTS.md, "Contracts"):
//
//   npm install --save-dev --save-exact json-schema-to-typescript@16.0.0 yaml@2.9.1
//   node generate-event-types.mjs asyncapi.yaml > src/paymentEvents.ts
//
// Every message's payload schema becomes a named type (OrderCompletedEvent, RefundFinalizedEvent, ...), and
// PaymentEvent is their union, discriminated by `type` (the routing key). The types name the fields of this
// version only: fields a later 1.x adds are in the messages, untyped (docs/EVENTS.md, "Compatibility"). The
// versions above are the ones this repository tests the output with (test/contracts/contracts.test.ts).
import { readFileSync } from 'node:fs';
import { compile } from 'json-schema-to-typescript';
import { parse } from 'yaml';

const [file = 'asyncapi.yaml'] = process.argv.slice(2);
const asyncapi = parse(readFileSync(file, 'utf8'));
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
