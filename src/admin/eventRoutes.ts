import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Db } from '../database/pool';
import { RequestError } from '../errors';
import { EVENT_TYPES, typesMatching, type EventType } from '../outbox/cloudEvents';
import { FEED_LIMIT_MAX, readFeedPage, type FeedCursor, type FeedQuery } from '../outbox/feedQueries';
import { replayToQueue, type QueueReplayOutcome } from '../outbox/queueReplay';
import { hasControlCharacter, hasFormatCharacter, idProblem } from '../parsing/identifiers';
import { INSTANT_EXAMPLE, readInstant } from '../parsing/instants';
import { replayQueueProblem, type Caller } from './tokens';

/**
 * The events for downstream teams, on the admin port behind its token: the feed (GET /events), the outbox's
 * CloudEvents in the order they were stored, by time range, type and order, a keyset-cursor page at a time; and
 * the replay (POST /events/replay) of the same selection into one team's queue. docs/openapi.yaml, docs/EVENTS.md.
 */

export interface EventRoutesOptions {
  db: Db;
  /** The broker a replay publishes to (AMQP_URL); null: replays are refused. */
  amqpUrl: string | null;
  /** Lets in ADMIN_TOKEN's holder and the teams (EVENT_TEAM_TOKENS), and says who called (`callerOf`). */
  authorized: RequestHandler;
  callerOf: (res: Response) => Caller;
  limited: <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;
  /**
   * The audit trail of replays (an action: events go out again): `begin` before anything is published (its row's
   * id), `complete` once it is known how it ended; a replay that fails between them stays on the record as begun.
   */
  replayAudit: {
    begin(
      req: Request,
      caller: Caller,
      replay: { queue: string; orderId: string | null; detail: string },
    ): Promise<string>;
    complete(id: string, result: string): Promise<void>;
  };
}

const FEED_LIMIT_DEFAULT = 100;
/** Events one replay call publishes at most; the answer says where the next call goes on. */
const REPLAY_LIMIT_MAX = 10_000;

const invalid = (parameter: string, problem: string): RequestError =>
  new RequestError(400, 'invalid_query', `${parameter}: ${problem}`);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A cursor's stored time: what Postgres writes for a timestamptz as JSON, microseconds kept. */
const STORED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}(:\d{2})?)$/;

/**
 * The times a selection or a cursor may name: the years 1 to 9999, what the feed's stored times (timestamptz) hold
 * in the four-digit years these forms write. The year 0000 (and an offset that leads into it) is refused here,
 * never sent to Postgres, which has no year 0.
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const inFeedRange = (ms: number): boolean => !Number.isNaN(ms) && ms >= EARLIEST && ms <= LATEST;

export function encodeCursor({ at, id }: FeedCursor): string {
  return Buffer.from(`${at}/${id}`, 'utf8').toString('base64url');
}

function decodeCursor(value: string): FeedCursor | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(value)) return null;
  const [at = '', id = '', ...rest] = Buffer.from(value, 'base64url').toString('utf8').split('/');
  return rest.length === 0 && STORED_TIME.test(at) && inFeedRange(Date.parse(at)) && UUID.test(id) ? { at, id } : null;
}

/** With the u flag, a pair is one code point: only a surrogate alone matches. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

/**
 * What no parameter may hold, checked before anything is looked up: a control character (NUL, a line break: the
 * database refuses a NUL, a log or an audit row would be cut by it), an invisible or bidirectional format
 * character, or a lone surrogate (not text at all).
 */
function textProblem(value: string): string | null {
  if (hasControlCharacter(value)) return 'holds a control character';
  if (hasFormatCharacter(value)) return 'holds an invisible or bidirectional format character';
  if (LONE_SURROGATE.test(value)) return 'is not well-formed text (a lone surrogate)';
  return null;
}

/** A string parameter's value, refused (400 naming it) when textProblem finds a problem. */
function text(name: string, value: string): string {
  const problem = textProblem(value);
  if (problem !== null) throw invalid(name, problem);
  return value;
}

/** One value of a parameter: a string, or absent; a parameter given twice (or not as text) is refused. */
function single(source: Record<string, unknown>, name: string): string | undefined {
  const value = source[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(name, 'give it once, as text');
  return text(name, value);
}

function instant(source: Record<string, unknown>, name: string): Date | null {
  const value = single(source, name);
  if (value === undefined) return null;
  const time = readInstant(value);
  if (time === null) throw invalid(name, `not an ISO 8601 time with an offset, e.g. ${INSTANT_EXAMPLE}`);
  if (!inFeedRange(time.getTime())) throw invalid(name, 'outside the years 0001 to 9999');
  return time;
}

/**
 * Types: each an event type or a binding pattern (`refund.#`, `order.*`), as a queue's binding takes them;
 * repeated (`type=a&type=b`), comma-separated, or (in a body) an array. A pattern that matches no type is refused,
 * listing the types.
 */
function types(source: Record<string, unknown>, name: string): EventType[] {
  const value = source[name];
  if (value === undefined) return [];
  const list = (Array.isArray(value) ? value : [value]).flatMap((v: unknown) =>
    typeof v === 'string' ? text(name, v).split(',') : [v],
  );
  const chosen = new Set<EventType>();
  for (const pattern of list) {
    const matched = typeof pattern === 'string' ? typesMatching(pattern) : null;
    if (matched === null || matched.length === 0)
      throw invalid(
        name,
        `${JSON.stringify(pattern)} ${matched === null ? 'is not an event type or a binding pattern' : 'matches no event type'} ` +
          `(the types: ${EVENT_TYPES.join(', ')}; a pattern such as refund.# or order.* takes several)`,
      );
    for (const type of matched) chosen.add(type);
  }
  return EVENT_TYPES.filter((type) => chosen.has(type));
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

/** A queue name RabbitMQ takes (1 to 255 bytes), of text a person can read in the audit trail. */
function queueName(body: Record<string, unknown>): string {
  const queue = body.queue;
  if (typeof queue !== 'string' || queue === '' || Buffer.byteLength(queue) > 255)
    throw invalid('queue', 'the name of an existing queue of yours (1 to 255 bytes)');
  return text('queue', queue);
}

/** What the audit row of a replay says of how it ended. */
function replayResult(replayed: QueueReplayOutcome): string {
  switch (replayed.outcome) {
    case 'replayed':
    case 'not_confirmed':
      return `${replayed.outcome} ${replayed.replayed}`;
    case 'queue_exclusive':
      return 'refused: the queue is held exclusively by another connection';
    default:
      return replayed.outcome;
  }
}

export function registerEventRoutes(
  app: Express,
  { db, amqpUrl, authorized, callerOf, limited, replayAudit }: EventRoutesOptions,
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
    // Everything the request says is read and checked before the broker or the database is asked anything.
    const queue = queueName(source);
    const query = selection(source, { fallback: REPLAY_LIMIT_MAX, max: REPLAY_LIMIT_MAX });
    const caller = callerOf(res);
    const refused = replayQueueProblem(caller.kind === 'team' ? caller.team : null, queue);
    if (refused !== null) throw new RequestError(403, 'queue_not_allowed', `${refused}; nothing was published`);
    if (amqpUrl === null)
      throw new RequestError(503, 'broker_unavailable', 'no broker is configured (AMQP_URL)', null, {
        'Retry-After': '60',
      });
    const replayed = await limited(res, async (clientLeft) => {
      // On the record before the first event goes out; how it ended, once that is known.
      const audit = await replayAudit.begin(req, caller, {
        queue,
        orderId: query.orderId,
        detail: describeSelection(query),
      });
      let outcome: QueueReplayOutcome;
      try {
        outcome = await replayToQueue(db, amqpUrl, { queue, query }, clientLeft);
      } catch (error) {
        await replayAudit.complete(audit, 'failed: the replay stopped on an error').catch(() => undefined);
        throw error;
      }
      await replayAudit.complete(audit, replayResult(outcome));
      return outcome;
    });
    switch (replayed.outcome) {
      case 'queue_not_found':
        throw new RequestError(404, 'queue_not_found', `the queue ${queue} does not exist; nothing was published`);
      case 'queue_exclusive':
        throw new RequestError(
          403,
          'queue_not_allowed',
          `the queue ${queue} is held exclusively by another connection (a consumer's own queue): it is not yours to ` +
            'replay into; nothing was published',
        );
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

/** A replay's selection in the audit trail's words: what was asked for, never more than a line. */
function describeSelection({ since, until, types: chosen, after, limit: most }: FeedQuery): string {
  return [
    since ? `since ${since.toISOString()}` : '',
    until ? `until ${until.toISOString()}` : '',
    chosen.length > 0 ? `types ${chosen.join(' ')}` : '',
    after ? `after ${after.at}` : '',
    `at most ${most}`,
  ]
    .filter((part) => part !== '')
    .join(', ');
}
