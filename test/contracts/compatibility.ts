/**
 * Whether a version of docs/asyncapi.yaml can replace an earlier one without breaking a consumer written against
 * the earlier one (docs/EVENTS.md, "Compatibility"): every channel is still there, and every message the new one
 * allows is one the earlier one allowed, but for fields it did not know (a consumer accepts those). So a field
 * may be added, even required; none may be removed while the earlier one required it, renamed, retyped, made
 * nullable, or given a value, a pattern or a format the earlier one did not allow.
 *
 * It reads the subset of JSON Schema the document uses: $ref (local), allOf, oneOf, type (one or a list), const,
 * enum, properties, required, items, pattern, format, minimum, minLength, minItems.
 */

type JsonObject = { [key: string]: unknown };

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One way a value may be: a JSON type with what narrows it. */
interface Alternative {
  type: string;
  const?: unknown;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  minLength?: number;
  minItems?: number;
  /** Objects: each property's alternatives, and which are required. */
  properties?: Map<string, Alternative[]>;
  required?: Set<string>;
  /** Arrays: their items' alternatives. */
  items?: Alternative[];
}

const TYPE_OF = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' ? 'number' : typeof value;

class Reader {
  constructor(private readonly document: JsonObject) {}

  private resolve(schema: unknown): JsonObject {
    let current = isObject(schema) ? schema : {};
    for (let depth = 0; typeof current.$ref === 'string' && depth < 20; depth++) {
      const target = lookup(this.document, current.$ref);
      const { $ref: _ref, ...rest } = current;
      current = { ...(isObject(target) ? target : {}), ...rest };
    }
    return current;
  }

  /** A schema's alternatives: allOf merged into one, oneOf and type lists spread. */
  alternatives(schema: unknown): Alternative[] {
    const s = this.resolve(schema);
    const parts = Array.isArray(s.allOf) ? s.allOf.map((part) => this.alternatives(part)) : [];
    const own = this.own(s);
    // allOf: every part holds at once; the document narrows one shape at a time, so merge into each of own's.
    let merged = own;
    for (const part of parts) merged = merged.flatMap((a) => part.map((b) => merge(a, b)));
    return merged;
  }

  private own(s: JsonObject): Alternative[] {
    if (Array.isArray(s.oneOf)) {
      const { oneOf, ...rest } = s;
      return oneOf.flatMap((choice) => this.alternatives({ ...rest, ...this.resolve(choice) }));
    }
    const narrowing: Omit<Alternative, 'type'> = {};
    if ('const' in s) narrowing.const = s.const;
    if (Array.isArray(s.enum)) narrowing.enum = s.enum;
    if (typeof s.pattern === 'string') narrowing.pattern = s.pattern;
    if (typeof s.format === 'string') narrowing.format = s.format;
    if (typeof s.minimum === 'number') narrowing.minimum = s.minimum;
    if (typeof s.minLength === 'number') narrowing.minLength = s.minLength;
    if (typeof s.minItems === 'number') narrowing.minItems = s.minItems;
    if (isObject(s.properties)) {
      narrowing.properties = new Map(Object.entries(s.properties).map(([k, v]) => [k, this.alternatives(v)]));
      narrowing.required = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
    } else if (Array.isArray(s.required)) narrowing.required = new Set(s.required.map(String));
    if (s.items !== undefined) narrowing.items = this.alternatives(s.items);
    const types = Array.isArray(s.type)
      ? s.type.map(String)
      : typeof s.type === 'string'
        ? [s.type]
        : 'const' in s
          ? [TYPE_OF(s.const)]
          : Array.isArray(s.enum)
            ? [...new Set(s.enum.map(TYPE_OF))]
            : narrowing.properties || narrowing.required
              ? ['object']
              : ['any'];
    return types.map((type) => ({ ...narrowing, type }));
  }
}

/** Two narrowings of one value, both holding. */
function merge(a: Alternative, b: Alternative): Alternative {
  const type = a.type === 'any' ? b.type : a.type;
  const properties = new Map(a.properties ?? []);
  for (const [k, v] of b.properties ?? []) {
    const before = properties.get(k);
    properties.set(k, before ? before.flatMap((x) => v.map((y) => merge(x, y))) : v);
  }
  return {
    ...a,
    ...b,
    type,
    ...(a.properties || b.properties ? { properties } : {}),
    ...(a.required || b.required ? { required: new Set([...(a.required ?? []), ...(b.required ?? [])]) } : {}),
  };
}

/** Why the values `now` allows are not all allowed by `before` (empty: they are), at `where`. */
function narrowerProblems(now: Alternative[], before: Alternative[], where: string): string[] {
  const problems: string[] = [];
  for (const alternative of now) {
    const candidates = before.filter((b) => b.type === 'any' || b.type === alternative.type);
    if (candidates.length === 0) {
      problems.push(`${where}: may now be ${alternative.type}, which it could not be`);
      continue;
    }
    const tried = candidates.map((b) => covers(alternative, b, where));
    if (!tried.some((p) => p.length === 0)) problems.push(...(tried[0] ?? []));
  }
  return problems;
}

function covers(now: Alternative, before: Alternative, where: string): string[] {
  const problems: string[] = [];
  const values = now.const !== undefined ? [now.const] : now.enum;
  if (before.const !== undefined && !(values?.length === 1 && values[0] === before.const))
    problems.push(`${where}: was always ${JSON.stringify(before.const)}`);
  if (before.enum && !(values && values.every((v) => before.enum?.includes(v))))
    problems.push(`${where}: may now take values outside ${JSON.stringify(before.enum)}`);
  for (const key of ['pattern', 'format'] as const)
    if (before[key] !== undefined && now[key] !== before[key] && values === undefined)
      problems.push(`${where}: its ${key} changed from ${before[key]} to ${now[key] ?? 'none'}`);
  for (const key of ['minimum', 'minLength', 'minItems'] as const) {
    const was = before[key];
    if (was !== undefined && !((now[key] ?? -Infinity) >= was)) problems.push(`${where}: its ${key} went below ${was}`);
  }
  if (before.properties || before.required) {
    for (const name of before.required ?? [])
      if (!now.required?.has(name)) problems.push(`${where}.${name}: no longer always present`);
    for (const [name, was] of before.properties ?? []) {
      // Not named any more: in an open object, a field that may hold anything.
      const is = now.properties?.get(name) ?? [{ type: 'any' }];
      problems.push(...narrowerProblems(is, was, `${where}.${name}`));
    }
  }
  if (before.items) problems.push(...narrowerProblems(now.items ?? [{ type: 'any' }], before.items, `${where}[]`));
  return problems;
}

function lookup(document: JsonObject, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), document);
}

/** Each channel's message, read for comparison: its payload and AMQP properties, by routing key. */
function messagesOf(document: JsonObject): Map<string, { payload: Alternative[]; properties: Alternative[] }> {
  const reader = new Reader(document);
  const messages = new Map<string, { payload: Alternative[]; properties: Alternative[] }>();
  for (const channel of Object.values(isObject(document.channels) ? document.channels : {})) {
    if (!isObject(channel) || !isObject(channel.messages)) continue;
    for (const ref of Object.values(channel.messages)) {
      const message = isObject(ref) && typeof ref.$ref === 'string' ? lookup(document, ref.$ref) : ref;
      if (!isObject(message)) continue;
      messages.set(String(channel.address), {
        payload: reader.alternatives(message.payload),
        properties: reader.alternatives(message['x-amqp-properties']),
      });
    }
  }
  return messages;
}

/** What would break a consumer of `before` in `now`; empty when `now` only adds. */
export function breakingChanges(before: JsonObject, now: JsonObject): string[] {
  const was = messagesOf(before);
  const is = messagesOf(now);
  const problems: string[] = [];
  for (const [routingKey, message] of was) {
    const current = is.get(routingKey);
    if (!current) {
      problems.push(`${routingKey}: the channel is gone`);
      continue;
    }
    problems.push(...narrowerProblems(current.payload, message.payload, `${routingKey} body`));
    problems.push(...narrowerProblems(current.properties, message.properties, `${routingKey} properties`));
  }
  return problems;
}
