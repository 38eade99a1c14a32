import { idProblem } from './identifiers';
import { INSTANT_EXAMPLE, readInstant } from './instants';

/**
 * Lists of orders that people and shops give the service (issue 54): the orders a shop says it created
 * (`POST /orders/expected`, `orders expect`), and order ids to reconcile (`POST /orders/reconcile`,
 * `reconcile --orders-from`). Pure: each list is read whole and checked before anything is recorded, and a bad
 * entry is named by its place (an index in a body, a line of a file) and its field, never by its value.
 */

/** An order the shop said it created, for the POS it created it for, and when. */
export interface ExpectedOrder {
  orderId: string;
  posId: string;
  createdAt: Date;
}

/** Expected orders per request at most; a file is read in requests of that size. */
export const EXPECTED_ORDERS_MAX = 1000;
/** Expected orders in one file at most (`orders expect`). */
export const EXPECTED_FILE_MAX = 100_000;
/** Order ids one list reconciles at most. */
export const ORDER_LIST_MAX = 10_000;
/** How far in the future a creation time may be: the shop's clock and ours disagree by this much at most. */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** What an expected order is checked against. */
export interface ExpectedOrderRules {
  /** The POS the service receives for (SECOND_KEYS). */
  knownPos: readonly string[];
  now: Date;
  /** RECONCILE_GIVE_UP: an order created longer ago would never be checked. */
  oldestMs: number;
}

/** Why an entry cannot be taken: its place (a 0-based index, or a 1-based line), the field when one is at fault. */
export interface ListProblem {
  at: number;
  field: 'orderId' | 'posId' | 'createdAt' | null;
  problem: string;
  /** The list is longer than it may be (else: an entry, or the whole, cannot be read). */
  tooLong?: true;
}

const tooLong = (at: number, problem: string): { ok: false; problem: ListProblem } => ({
  ok: false,
  problem: { at, field: null, problem, tooLong: true },
});

/** A list read whole, or the first thing wrong with it. */
export type Read<T> = { ok: true; value: T } | { ok: false; problem: ListProblem };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One expected order, `{orderId, posId, createdAt}` (other fields are ignored), checked; or what is wrong. */
export function readExpectedOrder(value: unknown, rules: ExpectedOrderRules, at: number): Read<ExpectedOrder> {
  const refuse = (field: ListProblem['field'], problem: string): Read<ExpectedOrder> => ({
    ok: false,
    problem: { at, field, problem },
  });
  if (!isRecord(value)) return refuse(null, 'not an object {"orderId", "posId", "createdAt"}');
  const { orderId, posId, createdAt } = value;
  if (typeof orderId !== 'string') return refuse('orderId', 'missing, or not a string');
  const idTrouble = idProblem(orderId);
  if (idTrouble !== null) return refuse('orderId', idTrouble);
  if (typeof posId !== 'string') return refuse('posId', 'missing, or not a string');
  if (!rules.knownPos.includes(posId)) return refuse('posId', 'not a POS this service receives for (SECOND_KEYS)');
  if (typeof createdAt !== 'string') return refuse('createdAt', 'missing, or not a string');
  const created = readInstant(createdAt);
  if (created === null) return refuse('createdAt', `not an ISO 8601 time with an offset, e.g. ${INSTANT_EXAMPLE}`);
  if (created.getTime() > rules.now.getTime() + CLOCK_SKEW_MS)
    return refuse('createdAt', `in the future (more than ${CLOCK_SKEW_MS / 60_000} minutes ahead of this service)`);
  if (created.getTime() < rules.now.getTime() - rules.oldestMs)
    return refuse('createdAt', 'older than RECONCILE_GIVE_UP: it would never be checked');
  return { ok: true, value: { orderId, posId, createdAt: created } };
}

/** A JSON body's expected orders: an array of 1 to EXPECTED_ORDERS_MAX entries, each checked (`at`: its index). */
export function readExpectedOrders(body: unknown, rules: ExpectedOrderRules): Read<ExpectedOrder[]> {
  if (!Array.isArray(body) || body.length === 0)
    return { ok: false, problem: { at: 0, field: null, problem: 'the body is a JSON array of expected orders' } };
  if (body.length > EXPECTED_ORDERS_MAX)
    return tooLong(EXPECTED_ORDERS_MAX, `at most ${EXPECTED_ORDERS_MAX} orders a request`);
  const entries: readonly unknown[] = body;
  return collect(entries.map((entry, index) => readExpectedOrder(entry, rules, index)));
}

/**
 * A file's expected orders, as JSON lines: one `{"orderId", "posId", "createdAt"}` object a line, blank lines
 * skipped, at most EXPECTED_FILE_MAX (`at`: the 1-based line).
 */
export function readExpectedOrderLines(text: string, rules: ExpectedOrderRules): Read<ExpectedOrder[]> {
  const reads: Array<Read<ExpectedOrder>> = [];
  for (const { line, content } of contentLines(text)) {
    if (reads.length === EXPECTED_FILE_MAX) return tooLong(line, `more than ${EXPECTED_FILE_MAX} orders`);
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      return { ok: false, problem: { at: line, field: null, problem: 'not JSON' } };
    }
    const read = readExpectedOrder(value, rules, line);
    if (!read.ok) return read;
    reads.push(read);
  }
  return collect(reads);
}

/** A JSON body's order ids: an array of 1 to ORDER_LIST_MAX ids, each checked (`at`: its index); repeats once. */
export function readOrderIds(value: unknown): Read<string[]> {
  if (!Array.isArray(value) || value.length === 0)
    return { ok: false, problem: { at: 0, field: null, problem: 'orderIds is an array of order ids' } };
  if (value.length > ORDER_LIST_MAX) return tooLong(ORDER_LIST_MAX, `at most ${ORDER_LIST_MAX} orders`);
  const list: readonly unknown[] = value;
  const ids: string[] = [];
  for (const [index, id] of list.entries()) {
    const problem = typeof id === 'string' ? idProblem(id) : 'not a string';
    if (problem !== null) return { ok: false, problem: { at: index, field: 'orderId', problem } };
    if (typeof id === 'string') ids.push(id);
  }
  return { ok: true, value: [...new Set(ids)] };
}

/**
 * A file's order ids: one a line, spaces around it ignored, blank lines skipped, at most ORDER_LIST_MAX (`at`: the
 * 1-based line); repeats once, in the order first given.
 */
export function readOrderIdLines(text: string): Read<string[]> {
  const ids = new Set<string>();
  let count = 0;
  for (const { line, content } of contentLines(text)) {
    if (++count > ORDER_LIST_MAX) return tooLong(line, `more than ${ORDER_LIST_MAX} order ids`);
    const problem = idProblem(content);
    if (problem !== null) return { ok: false, problem: { at: line, field: 'orderId', problem } };
    ids.add(content);
  }
  if (count === 0) return { ok: false, problem: { at: 1, field: null, problem: 'no order id in it' } };
  return { ok: true, value: [...ids] };
}

/** The lines of a text that hold something (1-based numbers; `\n` or `\r\n`), trimmed. */
function* contentLines(text: string): Generator<{ line: number; content: string }> {
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const content = raw.trim();
    if (content !== '') yield { line: index + 1, content };
  }
}

function collect<T>(reads: ReadonlyArray<Read<T>>): Read<T[]> {
  const values: T[] = [];
  for (const read of reads) {
    if (!read.ok) return read;
    values.push(read.value);
  }
  return { ok: true, value: values };
}
