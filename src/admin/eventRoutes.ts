import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Db } from '../database/pool';
import { RequestError } from '../errors';
import { EVENT_TYPES, isEventType, type EventType } from '../outbox/events';
import { FEED_LIMIT_MAX, readFeedPage, type FeedCursor, type FeedQuery } from '../outbox/feedQueries';
import { replayToQueue } from '../outbox/queueReplay';
import { idProblem } from '../parsing/identifiers';
import { INSTANT_EXAMPLE, readInstant } from '../parsing/instants';

/**
 * The events for downstream teams, on the admin port behind its token: the feed (GET /events), the outbox's
 * CloudEvents in the order they were stored, by time range, type and order, a keyset-cursor page at a time; and
 * the replay (POST /events/replay) of the same selection into one team's queue. docs/openapi.yaml, docs/EVENTS.md.
 */

export interface EventRoutesOptions {
  db: Db;
  /** The broker a replay publishes to (AMQP_URL); null: replays are refused. */
  amqpUrl: string | null;
  authorized: RequestHandler;
  limited: <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;
  /** Records a replay in the audit trail (an action: events go out again), whatever its outcome. */
  recordReplay: (req: Request, replay: { queue: string; orderId: string | null; result: string }) => Promise<void>;
}

const FEED_LIMIT_DEFAULT = 100;
/** Events one replay call publishes at most; the answer says where the next call goes on. */
const REPLAY_LIMIT_MAX = 10_000;

const invalid = (parameter: string, problem: string): RequestError =>
  new RequestError(400, 'invalid_query', `${parameter}: ${problem}`);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A cursor's stored time: what Postgres writes for a timestamptz as JSON, microseconds kept. */
const STORED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}(:\d{2})?)$/;

export function encodeCursor({ at, id }: FeedCursor): string {
  return Buffer.from(`${at}/${id}`, 'utf8').toString('base64url');
}

function decodeCursor(value: string): FeedCursor | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(value)) return null;
  const [at = '', id = '', ...rest] = Buffer.from(value, 'base64url').toString('utf8').split('/');
  return rest.length === 0 && STORED_TIME.test(at) && !Number.isNaN(Date.parse(at)) && UUID.test(id)
    ? { at, id }
    : null;
}

/** One value of a parameter: a string, or absent; a parameter given twice (or not as text) is refused. */
function single(source: Record<string, unknown>, name: string): string | undefined {
  const value = source[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(name, 'give it once, as text');
  return value;
}

function instant(source: Record<string, unknown>, name: string): Date | null {
  const value = single(source, name);
  if (value === undefined) return null;
  const time = readInstant(value);
  if (time === null) throw invalid(name, `not an ISO 8601 time with an offset, e.g. ${INSTANT_EXAMPLE}`);
  return time;
}

/** Types: repeated (`type=a&type=b`), comma-separated, or (in a body) an array. */
function types(source: Record<string, unknown>, name: string): EventType[] {
  const value = source[name];
  if (value === undefined) return [];
  const list = (Array.isArray(value) ? value : [value]).flatMap((v: unknown) =>
    typeof v === 'string' ? v.split(',') : [v],
  );
  const chosen: EventType[] = [];
  for (const t of list) {
    if (typeof t !== 'string' || !isEventType(t))
      throw invalid(name, `${JSON.stringify(t)} is not an event type (${EVENT_TYPES.join(', ')})`);
    chosen.push(t);
  }
  return chosen;
}

function limit(source: Record<string, unknown>, name: string, fallback: number, max: number): number {
  const value = source[name];
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw invalid(name, `a whole number from 1 to ${max}`);
  return n;
}

/** The selection the feed and the replay share, read from a query string or a JSON body. */
function selection(source: Record<string, unknown>, limits: { fallback: number; max: number }): FeedQuery {
  const since = instant(source, 'since');
  const until = instant(source, 'until');
  if (since && until && until.getTime() <= since.getTime()) throw invalid('until', 'is not after since');
  const orderId = single(source, 'orderId') ?? null;
  if (orderId !== null && idProblem(orderId) !== null)
    throw invalid('orderId', `not an order id: ${idProblem(orderId)}`);
  const afterText = single(source, 'after');
  const after = afterText === undefined ? null : decodeCursor(afterText);
  if (afterText !== undefined && after === null) throw invalid('after', 'not a cursor this feed gave');
  return {
    since,
    until,
    types: types(source, 'type'),
    orderId,
    after,
    limit: limit(source, 'limit', limits.fallback, limits.max),
  };
}

/** The feed's page as JSON: the stored CloudEvents as they are (their text was written as JSON). */
function feedBody(events: ReadonlyArray<{ message: string }>, next: FeedCursor | null, more: boolean): string {
  return `{"events":[${events.map((e) => e.message).join(',')}],"next":${next ? JSON.stringify(encodeCursor(next)) : 'null'},"more":${more}}`;
}

/** A queue name RabbitMQ takes: 1 to 255 bytes. */
function queueName(body: Record<string, unknown>): string {
  const queue = body.queue;
  if (typeof queue !== 'string' || queue === '' || Buffer.byteLength(queue) > 255)
    throw invalid('queue', 'the name of an existing queue of yours (1 to 255 bytes)');
  return queue;
}

export function registerEventRoutes(
  app: Express,
  { db, amqpUrl, authorized, limited, recordReplay }: EventRoutesOptions,
): void {
  app.get('/events', authorized, async (req, res) => {
    const query = selection(req.query, {
      fallback: FEED_LIMIT_DEFAULT,
      max: FEED_LIMIT_MAX,
    });
    const page = await limited(res, () => readFeedPage(db, query));
    res.type('application/json').send(feedBody(page.events, page.next, page.more));
  });

  app.post('/events/replay', authorized, express.json({ limit: 4096, strict: true }), async (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new RequestError(400, 'bad_request', 'the body is a JSON object: {"queue": "...", "since": "...", ...}');
    const source = body as Record<string, unknown>;
    const queue = queueName(source);
    const query = selection(source, { fallback: REPLAY_LIMIT_MAX, max: REPLAY_LIMIT_MAX });
    if (amqpUrl === null)
      throw new RequestError(503, 'broker_unavailable', 'no broker is configured (AMQP_URL)', null, {
        'Retry-After': '60',
      });
    const replayed = await limited(res, (clientLeft) => replayToQueue(db, amqpUrl, { queue, query }, clientLeft));
    await recordReplay(req, {
      queue,
      orderId: query.orderId,
      result:
        replayed.outcome === 'replayed' || replayed.outcome === 'not_confirmed'
          ? `${replayed.outcome} ${replayed.replayed}`
          : replayed.outcome,
    });
    switch (replayed.outcome) {
      case 'queue_not_found':
        throw new RequestError(404, 'queue_not_found', `the queue ${queue} does not exist; nothing was published`);
      case 'broker_unavailable':
        throw new RequestError(503, 'broker_unavailable', 'the broker does not answer; nothing was published', null, {
          'Retry-After': '5',
        });
      case 'not_confirmed':
        throw new RequestError(
          502,
          'replay_incomplete',
          `${replayed.replayed} event(s) were published, then the broker did not take the next (${replayed.error}); replay again from the same cursor`,
        );
      case 'replayed':
        res.json({
          queue,
          replayed: replayed.replayed,
          next: replayed.next ? encodeCursor(replayed.next) : null,
          more: replayed.more,
        });
    }
  });
}
