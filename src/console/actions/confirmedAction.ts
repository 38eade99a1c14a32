import type { Request, Response, Router } from 'express';
import { beginAudit, completeAudit, type AuditAction } from '../../audit/auditQueries';
import type { Access } from '../frame/access';
import {
  field,
  isRefusal,
  refusal,
  readForm,
  send,
  sourceOf,
  type ConsoleOptions,
  type PageFrame,
} from '../frame/consoleRouting';
import type { PageContext } from '../frame/layout';
import { confirmPage, resultPage, type ActionResult, type Confirmation } from './actionView';

/** What the actions use of the console's options. */
export type ActionSettings = Pick<ConsoleOptions, 'db' | 'limited' | 'trustProxy'> & Pick<PageFrame, 'context'>;

/** What an action's audit row names before it acts: the action, what it acts on, and the order if known. */
export interface AuditedAction {
  action: AuditAction;
  target: string | null;
  orderId: string | null;
}

/** Says how an action ended, on its audit row (and the order it turned out to concern). */
export type Done = (result: string, detail?: string, orderId?: string) => Promise<void>;

/**
 * Registers a confirmed action: GET shows what it will do, POST with confirm=yes does it and says what happened.
 * `audited` reads and checks what the POST names (a bad one is 400 before anything is recorded or done); `act`
 * calls `done` with how it ended.
 */
export type ConfirmedAction = (
  path: string,
  audited: (req: Request) => AuditedAction,
  confirm: (req: Request, res: Response) => Confirmation | Promise<Confirmation>,
  act: (req: Request, res: Response, ctx: PageContext, done: Done) => Promise<ActionResult>,
) => void;

/**
 * The operators' actions, each a confirmation page and its POST (check now, send events again, retry, end a
 * person's sessions: on the order, quarantine and sessions pages). Each is recorded in the audit trail with who did
 * it, from which address, and how it ended: the row is written before the action acts and completed after, so that
 * whatever happens meanwhile it is on the record.
 */
export function confirmedActions(router: Router, access: Access, settings: ActionSettings): ConfirmedAction {
  const { db, context } = settings;
  return (path, audited, confirm, act) => {
    router.get(path, async (req, res) => {
      const { viewer, data } = await access.readFor(req, res, 'operator', async () => confirm(req, res));
      send(res, 200, confirmPage(context(req, viewer), data));
    });
    router.post(path, readForm, async (req, res) => {
      const viewer = await access.operatorOf(req, res);
      if (field(req, 'confirm') !== 'yes')
        throw refusal(
          400,
          'bad_request',
          'Not confirmed',
          'Nothing was done: the action needs its confirmation (confirm=yes), from its confirmation page.',
        );
      const what = audited(req);
      const row = await beginAudit(db, {
        actor: viewer.name,
        role: viewer.role,
        ...what,
        result: 'started',
        sourceAddress: sourceOf(req, settings.trustProxy),
      });
      let ended = false;
      const done: Done = async (result, detail = '', orderId) => {
        ended = true;
        await completeAudit(db, [row], { result, detail, ...(orderId === undefined ? {} : { orderId }) });
      };
      const ctx = context(req, viewer);
      let result: ActionResult;
      try {
        result = await act(req, res, ctx, done);
      } catch (error) {
        if (!ended)
          await completeAudit(db, [row], {
            result: 'failed',
            detail: isRefusal(error) ? error.message : 'stopped on an error',
          }).catch(() => undefined);
        throw error;
      }
      send(res, result.status, resultPage(ctx, result));
    });
  };
}
