/**
 * The published contracts as test assertions: every event a test consumer receives is checked against
 * docs/asyncapi.yaml, every HTTP answer a test gets through `contractAgent`/`contractFetch` against
 * docs/openapi.yaml. Schemas are compiled with ajv in the JSON Schema 2020-12 dialect (OpenAPI 3.1's, and a
 * superset of what the AsyncAPI document uses), so a payload that changes without its contract fails tests.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ConsumeMessage } from 'amqplib';
import request from 'supertest';
import { parse } from 'yaml';

export const ASYNCAPI_DOCUMENT = path.resolve(__dirname, '..', '..', 'docs', 'asyncapi.yaml');
export const OPENAPI_DOCUMENT = path.resolve(__dirname, '..', '..', 'docs', 'openapi.yaml');

/** The port an answer came from: the same path can be routed on one and unrouted on the other. */
export type Port = 'public' | 'admin';

type JsonObject = { [key: string]: unknown };

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function objectAt(value: unknown, where: string): JsonObject {
  if (!isObject(value)) throw new Error(`contract: ${where} is not an object`);
  return value;
}

/** Follows a local `#/a/b` reference, as many times as it takes. */
function resolve(document: JsonObject, value: unknown, where: string): JsonObject {
  let current = objectAt(value, where);
  while (typeof current.$ref === 'string') {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`contract: ${where}: only local references are supported (${ref})`);
    current = objectAt(
      ref
        .slice(2)
        .split('/')
        .reduce<unknown>(
          (node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
          document,
        ),
      ref,
    );
  }
  return current;
}

/**
 * One ajv per document: components.schemas become `$defs` of a schema with the document's own id, so
 * `#/components/schemas/X` references anywhere resolve to it.
 */
class SchemaSet {
  private readonly ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    // The documents narrow a shared schema with `properties` alone (an error code per status, a status per
    // routing key): the type comes from the schema they refer to.
    strictTypes: false,
  });
  private readonly cache = new WeakMap<object, ValidateFunction>();
  private readonly id: string;

  constructor(name: string, schemas: JsonObject) {
    this.id = `https://contracts.invalid/${name}`;
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: this.id, $defs: this.relocate(schemas) });
  }

  private relocate(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.relocate(v));
    if (!isObject(value)) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [
        key,
        key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
          ? `${this.id}#/$defs/${v.slice('#/components/schemas/'.length)}`
          : this.relocate(v),
      ]),
    );
  }

  /** Problems of `value` against `schema` (an object of the parsed document, compiled once). */
  problems(schema: JsonObject, value: unknown, where: string): string[] {
    let validate = this.cache.get(schema);
    if (!validate) {
      validate = this.ajv.compile(this.relocate(schema) as JsonObject);
      this.cache.set(schema, validate);
    }
    return validate(value) ? [] : (validate.errors ?? []).map((e: ErrorObject) => describe(where, e));
  }
}

function describe(where: string, e: ErrorObject): string {
  const detail = e.params && Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : '';
  return `${where}${e.instancePath} ${e.message ?? e.keyword}${detail}`;
}

function loadYaml(file: string): JsonObject {
  return objectAt(parse(readFileSync(file, 'utf8')), file);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Events (AsyncAPI)                                                                                     */

interface EventContract {
  payload: JsonObject;
  properties: JsonObject;
  messageType: string;
}

interface AsyncApiContract {
  schemas: SchemaSet;
  /** By routing key (a channel's address). */
  events: Map<string, EventContract>;
}

let asyncApi: AsyncApiContract | null = null;

function asyncApiContract(): AsyncApiContract {
  if (asyncApi) return asyncApi;
  const document = loadYaml(ASYNCAPI_DOCUMENT);
  const components = objectAt(document.components, 'components');
  const events = new Map<string, EventContract>();
  for (const [name, value] of Object.entries(objectAt(document.channels, 'channels'))) {
    const channel = resolve(document, value, `channels.${name}`);
    const messages = Object.values(objectAt(channel.messages, `channels.${name}.messages`));
    if (messages.length !== 1) throw new Error(`contract: channel ${name} must carry exactly one message`);
    const message = resolve(document, messages[0], `channels.${name}.messages`);
    const binding = resolve(document, objectAt(message.bindings, `${name} bindings`).amqp, `${name} amqp binding`);
    events.set(String(channel.address), {
      payload: objectAt(message.payload, `${name} payload`),
      properties: objectAt(message['x-amqp-properties'], `${name} x-amqp-properties`),
      messageType: String(binding.messageType),
    });
  }
  asyncApi = {
    schemas: new SchemaSet('asyncapi', closedObjects(objectAt(components.schemas, 'components.schemas'))),
    events,
  };
  return asyncApi;
}

/** Schemas the service's messages are held to as they are, not as a consumer reads them (AMQP properties). */
const LEFT_OPEN = new Set(['AmqpProperties']);

/**
 * The event schemas as the tests hold the service to them: every object closed (`unevaluatedProperties: false`), so
 * that a field the document does not name fails a test. The published schemas are open: a consumer accepts fields
 * added later in the same major version (docs/EVENTS.md, "Compatibility"); the service adds none undocumented.
 */
function closedObjects(schemas: JsonObject): JsonObject {
  const close = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(close);
    if (!isObject(value)) return value;
    const copy = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, close(v)]));
    return isObject(value.properties) && !('additionalProperties' in value)
      ? { ...copy, unevaluatedProperties: false }
      : copy;
  };
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, LEFT_OPEN.has(name) ? schema : close(schema)]),
  );
}

/** What the check reads of a consumed message (amqplib's ConsumeMessage is one). */
export interface ReceivedEvent {
  fields: { routingKey: string };
  properties: { messageId?: unknown; type?: unknown };
  content: Buffer;
}

/** Problems of one consumed message against the AsyncAPI document (empty: it matches). */
export function eventContractProblems(message: ReceivedEvent): string[] {
  const { schemas, events } = asyncApiContract();
  const routingKey = message.fields.routingKey;
  const contract = events.get(routingKey);
  if (!contract) return [`routing key ${routingKey} has no channel in docs/asyncapi.yaml`];
  let body: unknown;
  try {
    body = JSON.parse(message.content.toString('utf8'));
  } catch {
    return [`${routingKey}: the body is not JSON`];
  }
  const problems = [
    ...schemas.problems(contract.properties, message.properties, `${routingKey} properties`),
    ...schemas.problems(contract.payload, body, `${routingKey} body`),
  ];
  if (message.properties.type !== contract.messageType)
    problems.push(`${routingKey}: AMQP type ${String(message.properties.type)} is not ${contract.messageType}`);
  if (isObject(body) && body.id !== message.properties.messageId)
    problems.push(`${routingKey}: messageId ${String(message.properties.messageId)} is not the event id`);
  return problems;
}

/** Throws, listing every difference, when a consumed message does not match the AsyncAPI document. */
export function expectEventMatchesContract(message: ConsumeMessage | ReceivedEvent): void {
  const problems = eventContractProblems(message);
  if (problems.length > 0) throw new Error(`event does not match docs/asyncapi.yaml:\n  ${problems.join('\n  ')}`);
}

/* ---------------------------------------------------------------------------------------------------- */
/* HTTP answers (OpenAPI)                                                                                */

interface Operation {
  port: Port;
  method: string;
  template: string;
  pattern: RegExp;
  responses: JsonObject;
}

interface OpenApiContract {
  document: JsonObject;
  schemas: SchemaSet;
  operations: Operation[];
  unrouted: Record<Port, JsonObject>;
}

let openApi: OpenApiContract | null = null;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** A path template as both ports route it: any letter case, an optional trailing slash. */
function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`, 'i');
}

function openApiContract(): OpenApiContract {
  if (openApi) return openApi;
  const document = loadYaml(OPENAPI_DOCUMENT);
  const components = objectAt(document.components, 'components');
  const operations: Operation[] = [];
  for (const [template, value] of Object.entries(objectAt(document.paths, 'paths'))) {
    const item = objectAt(value, template);
    for (const method of METHODS.filter((m) => m in item)) {
      const operation = objectAt(item[method], `${method} ${template}`);
      const tags = Array.isArray(operation.tags) ? operation.tags : [];
      const port = tags.includes('public') ? 'public' : tags.includes('admin') ? 'admin' : null;
      if (!port) throw new Error(`contract: ${method} ${template} is tagged neither public nor admin`);
      const responses = objectAt(operation.responses, `${method} ${template} responses`);
      operations.push({ port, method, template, pattern: templatePattern(template), responses });
    }
  }
  const unrouted = objectAt(document['x-unrouted-answers'], 'x-unrouted-answers');
  openApi = {
    document,
    schemas: new SchemaSet('openapi', objectAt(components.schemas, 'components.schemas')),
    operations,
    unrouted: {
      public: objectAt(unrouted.public, 'unrouted public'),
      admin: objectAt(unrouted.admin, 'unrouted admin'),
    },
  };
  return openApi;
}

export type AnswerHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** Problems of one HTTP answer against the OpenAPI document (empty: it matches). */
export function answerContractProblems(
  method: string,
  requestPath: string,
  status: number,
  headers: AnswerHeaders,
  body: string,
  port?: Port,
): string[] {
  const { document, schemas, operations, unrouted } = openApiContract();
  const verb = method.toLowerCase();
  const pathOnly = requestPath.split('?')[0] ?? requestPath;
  const onPort = operations.filter((o) => (port === undefined || o.port === port) && o.pattern.test(pathOnly));
  // Express answers HEAD with the GET route.
  const operation =
    onPort.find((o) => o.method === verb) ?? (verb === 'head' ? onPort.find((o) => o.method === 'get') : undefined);
  const where = operation ? `${method} ${operation.template} ${status}` : `${method} ${pathOnly} (unrouted) ${status}`;
  const candidates = operation
    ? operation.responses
    : (Object.assign({}, ...(port ? [unrouted[port]] : [unrouted.public, unrouted.admin])) as JsonObject);
  if (!(String(status) in candidates)) return [`${where}: status ${status} is not documented`];
  const response = resolve(document, candidates[String(status)], where);
  const problems: string[] = [];
  const header = (name: string): string | undefined => {
    const value = headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  for (const [name, value] of Object.entries(isObject(response.headers) ? response.headers : {})) {
    const definition = resolve(document, value, `${where} header ${name}`);
    const actual = header(name);
    if (actual === undefined) {
      if (definition.required === true) problems.push(`${where}: header ${name} is missing`);
      continue;
    }
    problems.push(
      ...schemas.problems(objectAt(definition.schema, `${name} schema`), actual, `${where} header ${name}`),
    );
  }
  const content = isObject(response.content) ? response.content : null;
  if (verb === 'head') return problems;
  if (!content) {
    if (body.length > 0) problems.push(`${where}: documented without a body, but one came`);
    return problems;
  }
  const mediaType = (header('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const media = content[mediaType];
  if (!isObject(media)) return [...problems, `${where}: content type ${mediaType || '(none)'} is not documented`];
  const schema = objectAt(media.schema, `${where} schema`);
  if (mediaType === 'application/json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return [...problems, `${where}: the body is not JSON`];
    }
    problems.push(...schemas.problems(schema, parsed, `${where} body`));
  } else {
    problems.push(...schemas.problems(schema, body, `${where} body`));
  }
  return problems;
}

/** Throws, listing every difference, when an HTTP answer does not match the OpenAPI document. */
export function expectAnswerMatchesContract(...answer: Parameters<typeof answerContractProblems>): void {
  const problems = answerContractProblems(...answer);
  if (problems.length > 0) throw new Error(`answer does not match docs/openapi.yaml:\n  ${problems.join('\n  ')}`);
}

/** supertest against a running port, every answer checked against the OpenAPI document. */
export interface ContractAgent {
  get(path: string): request.Test;
  post(path: string): request.Test;
  put(path: string): request.Test;
  patch(path: string): request.Test;
  delete(path: string): request.Test;
  head(path: string): request.Test;
}

export function contractAgent(baseUrl: string, port: Port): ContractAgent {
  const checked =
    (method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head') =>
    (requestPath: string): request.Test =>
      request(baseUrl)
        [method](requestPath)
        .expect((res) =>
          expectAnswerMatchesContract(
            method,
            requestPath,
            res.status,
            res.headers as AnswerHeaders,
            res.text ?? '',
            port,
          ),
        );
  return {
    get: checked('get'),
    post: checked('post'),
    put: checked('put'),
    patch: checked('patch'),
    delete: checked('delete'),
    head: checked('head'),
  };
}

/** fetch, with the answer checked against the OpenAPI document before it is handed back. */
export async function contractFetch(url: string, port: Port, init?: RequestInit): Promise<Response> {
  const response = await fetch(url, init);
  const body = await response.clone().text();
  const { pathname, search } = new URL(url);
  expectAnswerMatchesContract(
    init?.method ?? 'GET',
    `${pathname}${search}`,
    response.status,
    Object.fromEntries(response.headers.entries()),
    body,
    port,
  );
  return response;
}
