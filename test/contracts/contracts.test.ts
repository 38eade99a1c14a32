/**
 * The contracts themselves: both documents pass their official parsers, every routing key the recorder can
 * produce has a channel, the checks the integration tests rely on reject what drifted, and the README's
 * command for downstream event types produces TypeScript that compiles.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DiagnosticSeverity, Parser } from '@asyncapi/parser';
import { validate } from '@readme/openapi-parser';
import { parse } from 'yaml';
import { ERROR_CODES } from '../../src/errors';
import { buildEvent, CLOUDEVENTS_CONTENT_TYPE, statusEventType } from '../../src/outbox/cloudEvents';
import { ORDER_STATUSES, REFUND_STATUSES } from '../../src/parsing/notification';
import {
  answerContractProblems,
  ASYNCAPI_DOCUMENT,
  eventContractProblems,
  expectEventMatchesContract,
  OPENAPI_DOCUMENT,
  type ReceivedEvent,
} from '../support/contracts';
import { COMPLETED_ORDER_DATA } from '../support/fixtures';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

describe('the documents', () => {
  it('When docs/asyncapi.yaml is parsed by @asyncapi/parser, then it is valid AsyncAPI 3.0', async () => {
    const { document, diagnostics } = await new Parser().parse(readFileSync(ASYNCAPI_DOCUMENT, 'utf8'));
    // Warnings and hints are style advice of the parser's ruleset; errors make the document invalid.
    expect(
      diagnostics
        .filter((d) => Number(d.severity) === Number(DiagnosticSeverity.Error))
        .map((d) => `${d.path.join('.')}: ${d.message}`),
    ).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
  });

  it('When docs/openapi.yaml is validated by @readme/openapi-parser, then it is valid OpenAPI 3.1', async () => {
    const result = await validate(parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect((parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')) as { openapi: string }).openapi).toMatch(/^3\.1\./);
  });

  it('When docs/openapi.yaml names the codes of its error answers, then they are exactly the ErrorCode union', () => {
    // Every `code` narrowed by an `enum` or a `const`, wherever an answer's schema does so.
    const documented = new Set<string>();
    const collect = (node: unknown): void => {
      if (typeof node !== 'object' || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'code' && typeof value === 'object' && value !== null) {
          if ('enum' in value && Array.isArray(value.enum)) for (const code of value.enum) documented.add(String(code));
          if ('const' in value) documented.add(String(value.const));
        }
        collect(value);
      }
    };
    collect(parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')));
    expect([...documented].sort()).toEqual([...ERROR_CODES].sort());
  });

  it('When the recorder can publish a routing key, then the AsyncAPI document has its channel, and no other', () => {
    const routingKeys = [
      ...ORDER_STATUSES.map((s) => statusEventType('order', s, false)),
      statusEventType('order', 'COMPLETED', true),
      ...REFUND_STATUSES.map((s) => statusEventType('refund', s, false)),
      statusEventType('refund', 'FINALIZED', true),
    ];
    const channels = Object.values(
      (parse(readFileSync(ASYNCAPI_DOCUMENT, 'utf8')) as { channels: Record<string, { address: string }> }).channels,
    ).map((c) => c.address);
    expect(channels.sort()).toEqual(routingKeys.sort());
  });
});

/** An event as a consumer receives it, with the properties the relay sets (brokerChannel.ts). */
function consumed(body: Record<string, unknown>, overrides: Record<string, unknown> = {}): ReceivedEvent {
  const type = String(body.type);
  const properties = {
    deliveryMode: 2,
    messageId: body.id,
    contentType: CLOUDEVENTS_CONTENT_TYPE,
    type,
    timestamp: 1_763_000_000,
    ...overrides,
  };
  return { fields: { routingKey: type }, properties, content: Buffer.from(JSON.stringify(body)) };
}

const completed = (): Record<string, unknown> & { data: Record<string, unknown> } =>
  JSON.parse(
    JSON.stringify(
      buildEvent('urn:payment-notification-receiver', 'order.completed', COMPLETED_ORDER_DATA, new Date()),
    ),
  );

describe('events against the AsyncAPI document', () => {
  it('When the recorder builds an order.completed event, then it matches', () => {
    expect(eventContractProblems(consumed(completed()))).toEqual([]);
    expect(() => expectEventMatchesContract(consumed(completed()))).not.toThrow();
  });

  it('When observedVia is left out, then the event does not match', () => {
    const event = completed();
    delete event.data.observedVia;
    expect(eventContractProblems(consumed(event))).not.toEqual([]);
  });

  it('When observedVia is set, then it must be one of the documented ways', () => {
    const event = completed();
    event.data.observedVia = 'reconciliation';
    expect(eventContractProblems(consumed(event))).toEqual([]);
    event.data.observedVia = 'rumour';
    expect(eventContractProblems(consumed(event))).not.toEqual([]);
  });

  it.each<[string, (event: Record<string, unknown> & { data: Record<string, unknown> }) => void]>([
    ['an amount as a JSON number', (e) => (e.data.totalAmount = 15000)],
    ['an undocumented field in data', (e) => (e.data.buyerEmail = 'x@example.com')],
    ['an undocumented envelope attribute', (e) => (e.traceparent = '00-abc')],
    ['a required field left out', (e) => delete e.data.sequence],
    ['a nullable field left out instead of null', (e) => delete e.data.payMethodType],
    ['null where the field may not be null', (e) => (e.data.orderId = null)],
    ['a status the routing key does not carry', (e) => (e.data.status = 'CANCELED')],
    ['a sequence of 0', (e) => (e.data.sequence = 0)],
    ['a time that is not a date-time', (e) => (e.time = 'yesterday')],
  ])('When an event carries %s, then it fails the contract', (_what, mutate) => {
    const event = completed();
    mutate(event);
    expect(eventContractProblems(consumed(event))).not.toEqual([]);
    expect(() => expectEventMatchesContract(consumed(event))).toThrow(/docs\/asyncapi\.yaml/);
  });

  it.each<[string, Record<string, unknown>]>([
    ['not persistent', { deliveryMode: 1 }],
    ['another content type', { contentType: 'application/json' }],
    ['a messageId other than the event id', { messageId: '00000000-0000-4000-8000-000000000000' }],
    ['an AMQP type other than the routing key', { type: 'order.canceled' }],
  ])('When the message is %s, then it fails the contract', (_what, properties) => {
    expect(eventContractProblems(consumed(completed(), properties))).not.toEqual([]);
  });

  it('When a routing key has no channel, then it fails the contract', () => {
    const event = { ...completed(), type: 'order.refunded' };
    expect(eventContractProblems(consumed(event))).toEqual([expect.stringContaining('order.refunded')]);
  });
});

describe('answers against the OpenAPI document', () => {
  const json = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r-1' };
  const error = (code: string) => JSON.stringify({ error: { code, message: 'm' } });

  it('When answers are as documented, then they match', () => {
    const answers: Array<Parameters<typeof answerContractProblems>> = [
      ['POST', '/notifications', 200, json, '{"outcome":"accepted"}', 'public'],
      ['POST', '/Notifications/?retry=1', 503, { ...json, 'retry-after': '5' }, error('overloaded'), 'public'],
      ['GET', '/notifications', 405, { ...json, allow: 'POST' }, error('method_not_allowed'), 'public'],
      ['GET', '/metrics', 404, json, error('not_found'), 'public'],
      ['GET', '/orders/X', 404, json, error('order_not_found'), 'admin'],
      ['GET', '/livez', 200, json, '{"status":"ok"}', 'admin'],
      ['GET', '/metrics', 200, { 'content-type': 'text/plain; version=0.0.4', 'x-request-id': 'r' }, 'up 1\n', 'admin'],
    ];
    for (const answer of answers)
      expect([answer.slice(0, 3), answerContractProblems(...answer)]).toEqual([answer.slice(0, 3), []]);
  });

  it.each<[string, Parameters<typeof answerContractProblems>]>([
    ['an undocumented outcome', ['POST', '/notifications', 200, json, '{"outcome":"ok"}', 'public']],
    ['an undocumented error code', ['POST', '/notifications', 401, json, error('expired'), 'public']],
    ['a 503 without Retry-After', ['POST', '/notifications', 503, json, error('busy'), 'public']],
    ['an undocumented status', ['POST', '/notifications', 418, json, error('teapot'), 'public']],
    ['no request id', ['GET', '/livez', 200, { 'content-type': 'application/json' }, '{"status":"ok"}', 'admin']],
    ['an undocumented field', ['GET', '/livez', 200, json, '{"status":"ok","uptime":3}', 'admin']],
    ['another media type', ['GET', '/livez', 200, { ...json, 'content-type': 'text/html' }, 'ok', 'admin']],
    ['an admin route answered on the public port', ['GET', '/livez', 200, json, '{"status":"ok"}', 'public']],
  ])('When an answer has %s, then it fails the contract', (_what, answer) => {
    expect(answerContractProblems(...answer)).not.toEqual([]);
  });
});

describe('types for downstream consumers', () => {
  it.each([
    ['src/paymentEvents.ts', []],
    ['src/paymentEventSchemas.json', ['--schemas']],
  ])(
    'When examples/consumer/%s is generated again from docs/asyncapi.yaml, then it is what is committed',
    (file, flags) => {
      const cwd = path.join(REPO_ROOT, 'examples', 'consumer');
      const generated = spawnSync(
        process.execPath,
        ['../../docs/generate-event-types.mjs', ...flags, '../../docs/asyncapi.yaml'],
        { cwd, encoding: 'utf8' },
      );
      expect(generated.stderr).toBe('');
      expect(generated.stdout).toBe(readFileSync(path.join(cwd, file), 'utf8'));
    },
  );

  it('When the docs pin the generator, then they pin the versions this repository tests it with', () => {
    const installed = ['json-schema-to-typescript', 'yaml'].map(
      (name) =>
        `${name}@${(JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`,
    );
    const command = `npm install --save-dev --save-exact ${installed.join(' ')}`;
    for (const file of ['docs/generate-event-types.mjs', 'docs/EVENTS.md'])
      expect([file, readFileSync(path.join(REPO_ROOT, file), 'utf8').includes(command)]).toEqual([file, true]);
  });

  it('When examples/consumer is built as a team builds it, with its own tsconfig, then it compiles', () => {
    const tsc = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'examples/consumer', '--noEmit'],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000);

  it("When the README's generator command runs on docs/asyncapi.yaml, then its output compiles and types the events", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'event-types-'));
    try {
      const generated = spawnSync(
        process.execPath,
        [path.join(REPO_ROOT, 'docs', 'generate-event-types.mjs'), path.join(REPO_ROOT, 'docs', 'asyncapi.yaml')],
        { cwd: REPO_ROOT, encoding: 'utf8' },
      );
      expect(generated.stderr).toBe('');
      expect(generated.status).toBe(0);
      writeFileSync(path.join(dir, 'paymentEvents.ts'), generated.stdout);
      // A consumer narrows on `type` and reads typed data; a wrong field would not compile.
      writeFileSync(
        path.join(dir, 'consumer.ts'),
        [
          "import type { PaymentEvent } from './paymentEvents';",
          'export function describe(event: PaymentEvent): string {',
          "  if (event.type === 'order.completed') {",
          '    const amount: string | null = event.data.totalAmount;',
          '    const sequence: number = event.data.sequence;',
          '    return `${event.data.orderId} ${amount ?? "?"} #${sequence}`;',
          '  }',
          "  if (event.type === 'refund.finalized') return event.data.refundId;",
          '  return event.id;',
          '}',
          '',
        ].join('\n'),
      );
      // The consumer's own project: strict, no @types of this repository (a consumer has its own), and the
      // standard library's declarations taken as given; the generated file itself is checked in full.
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            noEmit: true,
            strict: true,
            target: 'es2022',
            module: 'commonjs',
            types: [],
            skipLibCheck: true,
          },
          files: ['consumer.ts'],
        }),
      );
      const tsc = spawnSync(
        process.execPath,
        [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir],
        { cwd: dir, encoding: 'utf8' },
      );
      expect(tsc.stdout + tsc.stderr).toBe('');
      expect(tsc.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
