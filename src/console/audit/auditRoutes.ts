import type { Request, Response, Router } from 'express';
import { AUDIT_ACTIONS, auditPage as readAuditPage } from '../../audit/auditQueries';
import { idProblem } from '../../parsing/identifiers';
import type { Access } from '../frame/access';
import { ID, refusal, param, parseLocalTime, send, type ConsoleOptions, type PageFrame } from '../frame/consoleRouting';
import type { Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { PAGE_SIZE } from '../frame/listBounds';
import { auditPage } from './auditView';

/** The audit log (src/history/auditQueries.ts), filtered by person, action, order and time, a keyset page at a time. */
export function auditRoutes(
  router: Router,
  access: Access,
  settings: Pick<ConsoleOptions, 'db' | 'limited'> & Pick<PageFrame, 'clock' | 'context'>,
): void {
  const { db, limited, clock, context } = settings;

  router.get('/audit', async (req, res) => {
    const { viewer, data: page } = await access.readFor(req, res, 'viewer', () => audit(req, res));
    send(res, 200, page(context(req, viewer)));
  });

  /** The audit rows the filters ask for, as a page to draw for whoever may see it. */
  async function audit(req: Request, res: Response): Promise<(frame: PageContext) => Html> {
    const query = {
      actor: param(req, 'actor'),
      action: param(req, 'action'),
      order: param(req, 'order'),
      from: param(req, 'from'),
      to: param(req, 'to'),
    };
    const cursor = param(req, 'cursor');
    if (query.actor.length > 200 || /\p{Cc}/u.test(query.actor))
      throw refusal(400, 'invalid_query', 'Bad filter', 'person must be a name of up to 200 characters.');
    const action = AUDIT_ACTIONS.find((a) => a === query.action) ?? null;
    if (query.action !== '' && action === null)
      throw refusal(400, 'invalid_query', 'Bad filter', `action must be one of ${AUDIT_ACTIONS.join(', ')}.`);
    const orderProblem = query.order === '' ? null : idProblem(query.order);
    if (orderProblem !== null)
      throw refusal(400, 'invalid_query', 'Bad filter', `order is not an order id: ${orderProblem}.`);
    if (cursor !== '' && !ID.test(cursor))
      throw refusal(400, 'invalid_query', 'Bad filter', 'cursor must be an audit id.');
    const from = query.from === '' ? null : parseLocalTime(clock, 'from', query.from, false).at;
    const to = query.to === '' ? null : parseLocalTime(clock, 'to', query.to, true).at;
    if (from !== null && to !== null && from.getTime() >= to.getTime())
      throw refusal(400, 'invalid_query', 'Bad filter', 'from must be before to: the range is given oldest first.');
    const rows = await limited(res, () =>
      readAuditPage(
        db,
        {
          actor: query.actor === '' ? null : query.actor,
          action,
          orderId: query.order === '' ? null : query.order,
          from,
          to,
          before: cursor === '' ? null : cursor,
        },
        PAGE_SIZE + 1,
      ),
    );
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    return (frame) => auditPage(frame, query, rows.slice(0, PAGE_SIZE), next);
  }
}
