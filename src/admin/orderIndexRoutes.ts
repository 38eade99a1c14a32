import type { Express, RequestHandler, Response } from 'express';
import { readExportRange, streamExport } from '../console/exportStream';
import type { LocalTime } from '../console/localTime';
import type { Db } from '../database/pool';
import { RequestError } from '../errors';
import { idProblem } from '../parsing/identifiers';
import { INSTANT_EXAMPLE, readInstant } from '../parsing/instants';
import {
  decodeCursor,
  listOrders,
  ORDER_LIST_DEFAULT,
  ORDER_LIST_MAX,
  type OrderListFilter,
} from './orderIndexQueries';

/**
 * What finance compares its ledger against, on the JSON API behind the admin token (docs/openapi.yaml): GET /orders,
 * the list of orders (src/admin/orderIndexQueries.ts), and GET /exports/finance.csv, the console's finance export
 * (src/console/exportStream.ts: the same file for the same days). Bad input gets 400 naming the parameter; nothing
 * is looked up for it.
 */

const STATUSES = ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'CANCELED'];
const PARAMETERS = new Set(['since', 'until', 'status', 'posId', 'limit', 'after']);

const invalid = (parameter: string, problem: string): RequestError =>
  new RequestError(400, 'invalid_query', `${parameter}: ${problem}`);

function single(query: Record<string, unknown>, name: string): string | null {
  const value = query[name];
  if (value === undefined) return null;
  if (typeof value !== 'string') throw invalid(name, 'give it once, as text');
  return value;
}

function instant(query: Record<string, unknown>, name: string): Date | null {
  const value = single(query, name);
  if (value === null) return null;
  const at = readInstant(value);
  if (at === null || at.getUTCFullYear() < 1 || at.getUTCFullYear() > 9999)
    throw invalid(name, `not an ISO 8601 time with an offset, e.g. ${INSTANT_EXAMPLE}`);
  return at;
}

/** The filter a query string asks for. */
export function orderListFilter(query: Record<string, unknown>): OrderListFilter {
  const unknown = Object.keys(query).filter((name) => !PARAMETERS.has(name));
  if (unknown.length > 0)
    throw invalid(unknown[0] ?? '', `not a parameter of this list (they are: ${[...PARAMETERS].join(', ')})`);
  const from = instant(query, 'since');
  const to = instant(query, 'until');
  if (from && to && to.getTime() <= from.getTime()) throw invalid('until', 'is not after since');
  const status = single(query, 'status');
  if (status !== null && !STATUSES.includes(status)) throw invalid('status', `one of ${STATUSES.join(', ')}`);
  const posId = single(query, 'posId');
  if (posId !== null && idProblem(posId) !== null) throw invalid('posId', `not a POS id: ${idProblem(posId)}`);
  const limitText = single(query, 'limit');
  const limit = limitText === null ? ORDER_LIST_DEFAULT : /^\d{1,5}$/.test(limitText) ? Number(limitText) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > ORDER_LIST_MAX)
    throw invalid('limit', `a whole number from 1 to ${ORDER_LIST_MAX}`);
  const afterText = single(query, 'after');
  const after = afterText === null ? null : decodeCursor(afterText);
  if (afterText !== null && after === null) throw invalid('after', 'not a cursor this list gave');
  return { from, to, status, posId, limit, after };
}

export function registerOrderIndexRoutes(
  app: Express,
  options: {
    db: Db;
    authorized: RequestHandler;
    limited: <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;
    /** The console's zone and locale (CONSOLE_TIME_ZONE, CONSOLE_LOCALE): the export's days and times are in it. */
    clock: LocalTime;
    /** PAYMENT_SERVICE_TIME_ZONE: the finance CSV's booking times are read in it. */
    paymentServiceTimeZone: string;
  },
): void {
  app.get('/orders', options.authorized, async (req, res) => {
    const filter = orderListFilter(req.query);
    res.json(await options.limited(res, () => listOrders(options.db, filter)));
  });

  app.get('/exports/finance.csv', options.authorized, async (req, res) => {
    const query: Record<string, unknown> = req.query;
    const unknown = Object.keys(query).filter((name) => !['posId', 'from', 'to'].includes(name));
    if (unknown.length > 0)
      throw invalid(unknown[0] ?? '', 'not a parameter of the export (they are: posId, from, to)');
    const [posId, from, to] = ['posId', 'from', 'to'].map((name) => {
      const value = single(query, name);
      if (value === null) throw invalid(name, 'is required');
      return value;
    });
    const range = readExportRange(posId ?? '', from ?? '', to ?? '', options.clock);
    if ('problem' in range) throw new RequestError(400, 'invalid_query', range.problem);
    await options.limited(res, (clientLeft) =>
      streamExport(options.db, res, range, options.clock, options.paymentServiceTimeZone, clientLeft),
    );
  });
}
