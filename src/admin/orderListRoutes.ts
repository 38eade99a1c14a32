import { randomUUID } from 'node:crypto';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Db } from '../database/pool';
import { RequestError } from '../errors';
import { AUDITED_ORDERS_MAX, recordAudit, recordRepeat, type AuditEntry } from '../audit/auditQueries';
import { readExpectedOrders, readOrderIds, type ExpectedOrderRules, type ListProblem } from '../parsing/orderLists';
import type { Reconciliation } from '../reconciliation/reconciliation';
import {
  expectOrders,
  forceChecks,
  forcedCheckProgress,
  uncoveredForcedChecks,
} from '../reconciliation/scheduleQueries';

/**
 * What the reconciler cannot see from the projections, told through the admin port behind its token (issue 54):
 * the orders a shop created (POST /orders/expected), and lists of orders to reconcile that no record covers (POST
 * /orders/reconcile, followed by GET /orders/reconcile/{cause}). docs/openapi.yaml; docs/OPERATIONS.md,
 * "Reconciliation".
 *
 * A list is not checked while its request waits: it is put in the reconciler's schedule as forced checks under a
 * cause of its own, answered 202, and followed by its cause. Ten thousand checks at the payment API's pace
 * (PAYMENT_API_MAX_PER_SECOND, 10 by default) take many minutes: longer than a proxy keeps a request open, and a
 * place of ADMIN_CONCURRENCY held all along. The one active reconciler makes them, through the same limiter as
 * every other check, whichever replica the request reached, and goes on if the caller leaves or a replica restarts.
 */

export interface OrderListRoutesOptions {
  db: Db;
  reconciliation: Reconciliation | null;
  /** The POS the service receives for (SECOND_KEYS): an expected order's POS is one of them. */
  knownPos: readonly string[];
  authorized: RequestHandler;
  /** A POST from a browser on another site is refused (adminApp.ts). */
  sameOrigin: RequestHandler;
  limited: <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;
  /** Who is asking, for the audit trail. */
  caller: (req: Request, res: Response) => Pick<AuditEntry, 'actor' | 'sourceAddress'>;
  now: () => Date;
}

/** A forced check's cause, as a path names it: short, and nothing a path or a log line could misread. */
const CAUSE = /^[A-Za-z0-9][A-Za-z0-9:._-]{0,99}$/;
/** Orders a GET lists of those not covered, at most. */
const UNCOVERED_LISTED = 100;

const RECONCILIATION_OFF = new RequestError(
  409,
  'reconciliation_off',
  'reconciliation is off: PAYMENT_API_URL is not set',
);

/**
 * The answer to a list that cannot be taken: the whole body's problem, or one entry's, named by its index and its
 * field (`orders[3].createdAt`), or its index alone in a list of ids (`orderIds[3]`).
 */
function refusal(problem: ListProblem, list: 'orders' | 'orderIds'): RequestError {
  if (problem.tooLong) return new RequestError(400, 'too_many_orders', `${problem.problem}: give them in several`);
  if (problem.field === null) return new RequestError(400, 'bad_request', problem.problem);
  return list === 'orders'
    ? new RequestError(400, 'invalid_expected_order', `orders[${problem.at}].${problem.field}: ${problem.problem}`)
    : new RequestError(400, 'invalid_order_id', `orderIds[${problem.at}]: ${problem.problem}`);
}

export function registerOrderListRoutes(app: Express, options: OrderListRoutesOptions): void {
  const { db, reconciliation, knownPos, authorized, sameOrigin, limited, caller, now } = options;
  const operator = (req: Request, res: Response): Pick<AuditEntry, 'actor' | 'role' | 'via' | 'sourceAddress'> => ({
    ...caller(req, res),
    role: 'operator',
    via: 'api',
  });

  app.post(
    '/orders/expected',
    sameOrigin,
    authorized,
    express.json({ limit: '512kb', strict: true }),
    async (req, res) => {
      if (!reconciliation) throw RECONCILIATION_OFF;
      const rules: ExpectedOrderRules = { knownPos, now: now(), oldestMs: reconciliation.policy.giveUpMs };
      const read = readExpectedOrders(req.body, rules);
      if (!read.ok) throw refusal(read.problem, 'orders');
      const added = await limited(res, async () => {
        const count = await expectOrders(db, read.value);
        // A shop tells of every order it creates: one row an hour per caller, counting the requests.
        const at = now();
        const who = operator(req, res);
        await recordRepeat(
          db,
          {
            ...who,
            action: 'orders_expected',
            target: 'expected orders',
            result: 'recorded',
            detail: 'POST /orders/expected; the count is of requests this hour',
          },
          `orders_expected:${who.actor}:${who.sourceAddress ?? ''}:${at.toISOString().slice(0, 13)}`,
          at,
        );
        return count;
      });
      res.json({ received: read.value.length, new: added });
    },
  );

  app.post(
    '/orders/reconcile',
    sameOrigin,
    authorized,
    express.json({ limit: '2mb', strict: true }),
    async (req, res) => {
      if (!reconciliation) throw RECONCILIATION_OFF;
      const body: unknown = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body) || !('orderIds' in body))
        throw new RequestError(400, 'bad_request', 'the body is {"orderIds": [...], "posId": "..." (optional)}');
      const read = readOrderIds(body.orderIds);
      if (!read.ok) throw refusal(read.problem, 'orderIds');
      const posId = 'posId' in body ? body.posId : undefined;
      if (posId !== undefined && (typeof posId !== 'string' || !reconciliation.posIds.includes(posId)))
        throw new RequestError(400, 'unknown_pos', 'no payment API credentials are configured for that posId');
      // Orders nothing was recorded for are asked with the POS given, else with the only one configured.
      const askWith = posId ?? (reconciliation.posIds.length === 1 ? reconciliation.posIds[0] : undefined);
      const ids = read.value;
      const cause = `list:${randomUUID()}`;
      const answer = await limited(res, async () => {
        const scheduled = await forceChecks(
          db,
          ids.map((orderId) => (askWith === undefined ? { orderId } : { orderId, posId: askWith })),
          cause,
        );
        const who = operator(req, res);
        const detail = `forced check under ${cause}`;
        if (ids.length > AUDITED_ORDERS_MAX)
          await recordAudit(db, {
            ...who,
            action: 'reconcile',
            target: `${ids.length} orders`,
            result: 'scheduled',
            detail,
          });
        else
          for (const orderId of ids)
            await recordAudit(db, {
              ...who,
              action: 'reconcile',
              target: orderId,
              orderId,
              result: 'scheduled',
              detail,
            });
        return { scheduled, progress: await forcedCheckProgress(db, cause) };
      });
      const location = `/orders/reconcile/${encodeURIComponent(cause)}`;
      res
        .status(202)
        .location(location)
        .json({ cause, orders: ids.length, scheduled: answer.scheduled, ...answer.progress, progress: location });
    },
  );

  app.get('/orders/reconcile/:cause', authorized, async (req, res) => {
    const cause = typeof req.params.cause === 'string' ? req.params.cause : '';
    if (!CAUSE.test(cause))
      throw new RequestError(400, 'bad_request', 'not a cause: letters, digits and ":._-", 100 at most');
    const answer = await limited(res, async () => {
      const progress = await forcedCheckProgress(db, cause);
      if (progress.due + progress.answered + progress.uncovered === 0) return null;
      return {
        cause,
        ...progress,
        done: progress.due === 0,
        notCovered: await uncoveredForcedChecks(db, cause, UNCOVERED_LISTED),
      };
    });
    if (!answer)
      throw new RequestError(
        404,
        'checks_not_found',
        'no forced checks under that cause: none asked for, or all answered longer ago than RECONCILE_GIVE_UP',
      );
    res.json(answer);
  });
}
