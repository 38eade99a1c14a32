import type { Request, Response, Router } from 'express';
import { isDatabaseUnavailable } from '../database/databaseErrors';
import { CHECK_ACTION } from '../audit/auditQueries';
import { republishOrderEvents } from '../outbox/outboxQueries';
import type { PosProblem } from '../reconciliation/reconciliation';
import type { OrderCheck } from '../reconciliation/checkOrder';
import { retryOne, type RetryResult } from '../recording/quarantineRetry';
import { countOpenQuarantined, openQuarantinedIds, type QuarantineFilter } from '../recording/quarantineQueries';
import { readOrderStory, type OrderStory } from '../orderStory/orderStoryQueries';
import { beginAudit, completeAudit, type AuditAction } from '../audit/auditQueries';
import type { Access } from './access';
import {
  field,
  ID,
  orderIdOf,
  PageError,
  param,
  quarantineFilterOf,
  readForm,
  send,
  sourceOf,
  type ConsoleOptions,
} from './consoleRouting';
import { endSessionsOf } from './queries/sessions';
import { NAME } from './session';
import { href, html, type Html } from './html';
import { DELIVERY_OUTCOME_WORDS, quarantineReasonWords } from './words';
import { confirmPage, resultPage, type ActionResult, type Confirmation, type Link } from './views/actions';
import { checkStatus, nextCheck, whatFailed, type CheckState } from './views/checks';
import type { PageContext, Viewer } from './views/layout';
import { orderLink, plural, status, time, value, withSettings } from './views/parts';
import { setting, term } from './views/terms';

/** Quarantined notifications one bulk retry takes at most; the rest wait for the next one. */
export const BULK_RETRY_MAX = 200;

const POS_PROBLEMS: Record<PosProblem, string> = {
  pos_required:
    'nothing is recorded for this order and several shop accounts are set up, so the service cannot tell which one to ask with (the admin API takes a posId).',
  unknown_pos: 'no credentials are set up for this order’s shop account (PAYMENT_API_CREDENTIALS).',
  pos_mismatch: 'the order belongs to another shop account.',
};

const NOTHING_CHANGED = html`Nothing: no status was recorded and no event was written.`;
const backToOrder = (orderId: string): Link => ({ label: 'Back to the order', href: href(['orders', orderId]) });
const ATTENTION: Link = { label: 'Back to what needs attention', href: href(['attention']).at('set-aside') };

/** A status said by the payment service, in words: "order Paid (COMPLETED)", "refund 912873 Refunded (FINALIZED)". */
const said = (s: OrderCheck['said'][number]): Html =>
  s.kind === 'order'
    ? html`the order ${status('order', s.status)}`
    : html`refund ${value(s.id)} ${status('refund', s.status)}`;

const listed = (items: readonly Html[]): Html => html`${items.map((item, i) => html`${i > 0 ? '; ' : ''}${item}`)}`;

/** An order as it stands now, from its story: its status, and what its next automatic check depends on. */
interface OrderNow extends CheckState {
  status: string | null;
  updatedAt: Date | null;
}

function orderNowOf(story: OrderStory | null): OrderNow {
  if (story === null)
    return { status: null, updatedAt: null, open: false, lastChange: null, nextCheckAt: null, givenUpAt: null };
  const changes = [story.order?.updatedAt, ...story.refunds.map((r) => r.updatedAt)].filter(
    (at): at is Date => at !== undefined,
  );
  return {
    status: story.order?.status ?? null,
    updatedAt: story.order?.updatedAt ?? null,
    open:
      (story.order !== null && story.order.status !== 'COMPLETED' && story.order.status !== 'CANCELED') ||
      story.refunds.some((r) => r.status === 'PENDING'),
    lastChange: changes.length === 0 ? null : new Date(Math.max(...changes.map((at) => at.getTime()))),
    nextCheckAt: story.reconciliation?.nextCheckAt ?? null,
    givenUpAt: story.reconciliation?.givenUpAt ?? null,
  };
}

/** The order's status now, in a sentence. */
function orderStatusNow(state: OrderNow, ctx: PageContext): Html {
  if (state.status === null) return html`nothing is recorded of the order itself.`;
  return html`${status('order', state.status)} since ${time(state.updatedAt, ctx)}.`;
}

/** One retried notification, in words. */
function retryLine(r: RetryResult): Html {
  switch (r.result) {
    case 'recorded':
      return html`#${r.id}: read and recorded for order ${orderLink(r.orderId)}
      (${DELIVERY_OUTCOME_WORDS[r.outcome as keyof typeof DELIVERY_OUTCOME_WORDS]?.label ?? r.outcome}); no longer set
      aside.`;
    case 'still_unreadable':
      return html`#${r.id}: still cannot be read (${quarantineReasonWords(r.reason)}: ${value(r.detail)}); still set
      aside, nothing changed.`;
    case 'not_found':
      return html`#${r.id}: there is no notification set aside with this number.`;
    case 'already_resolved':
      return html`#${r.id}: already retried and recorded before${r.detail ? html` (${value(r.detail)})` : ''}; nothing
      changed.`;
    case 'body_purged':
      return html`#${r.id}: what was received has been deleted (${setting('BODY_RETENTION')}), so it cannot be read
      again; nothing changed.`;
    case 'pos_mismatch':
      return html`#${r.id}: it names another shop account than the one whose key signed it (${value(r.detail)}); nothing
      changed.`;
    case 'failed':
      return html`#${r.id}: recording it failed (${value(r.detail)}); nothing changed.`;
  }
}

/** What the actions use of the console's options, and how they draw a page's frame. */
export type ActionSettings = Pick<
  ConsoleOptions,
  | 'db'
  | 'limited'
  | 'transactions'
  | 'reconciliation'
  | 'checkSchedule'
  | 'eventSource'
  | 'paymentServiceTimeZone'
  | 'trustProxy'
> & { context: (req: Request, viewer: Viewer | null) => PageContext };

/** What an action's audit row names before it acts: the action, what it acts on, and the order if known. */
interface AuditedAction {
  action: AuditAction;
  target: string | null;
  orderId: string | null;
}

/** Says how an action ended, on its audit row (and the order it turned out to concern). */
type Done = (result: string, detail?: string, orderId?: string) => Promise<void>;

/**
 * The operators' actions, each a confirmation page and its POST: check now, send events again, retry, end a
 * person's sessions. Each is recorded in the audit trail with who did it, from which address, and how it ended:
 * the row is written before the action acts and completed after, so that whatever happens meanwhile it is on the
 * record.
 */
export function actionRoutes(router: Router, access: Access, settings: ActionSettings): void {
  const { db, limited, context } = settings;
  const options = settings;
  // What a retried notification's events are built with, as the recorder's are.
  const recording = { eventSource: options.eventSource, paymentServiceTimeZone: options.paymentServiceTimeZone };

  /**
   * A confirmed action: GET shows what it will do, POST with confirm=yes does it and says what happened. `audited`
   * reads and checks what the POST names (a bad one is 400 before anything is recorded or done); `act` calls `done`
   * with how it ended.
   */
  const action = (
    path: string,
    audited: (req: Request) => AuditedAction,
    confirm: (req: Request, res: Response) => Confirmation | Promise<Confirmation>,
    act: (req: Request, res: Response, ctx: PageContext, done: Done) => Promise<ActionResult>,
  ): void => {
    router.get(path, async (req, res) => {
      const { viewer, data } = await access.readFor(req, res, 'operator', async () => confirm(req, res));
      send(res, 200, confirmPage(context(req, viewer), data));
    });
    router.post(path, readForm, async (req, res) => {
      const viewer = await access.operatorOf(req, res);
      if (field(req, 'confirm') !== 'yes')
        throw new PageError(
          400,
          'Not confirmed',
          'Nothing was done: the action needs its confirmation (confirm=yes), from its confirmation page.',
        );
      const what = audited(req);
      const row = await beginAudit(db, {
        actor: viewer.name,
        role: viewer.role,
        ...what,
        result: 'started',
        sourceAddress: sourceOf(req, options.trustProxy),
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
            detail: error instanceof PageError ? error.message : 'stopped on an error',
          }).catch(() => undefined);
        throw error;
      }
      send(res, result.status, resultPage(ctx, result));
    });
  };

  /** An order's action: its id from the path, named in the row. */
  const onOrder =
    (name: AuditAction) =>
    (req: Request): AuditedAction => {
      const orderId = orderIdOf(req);
      return { action: name, target: orderId, orderId };
    };

  action(
    '/orders/:orderId/reconcile',
    onOrder(CHECK_ACTION),
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Check order ${orderId} with the payment service now`,
        explanation: html`<p>
          The service asks the payment service for this order’s status and its refunds’ now. A status it had not
          recorded is recorded as a notification would be, marked
          ${term('learnt', '“learnt from the payment service”')}, and passed on to other services. If the payment
          service says nothing new, nothing changes.
        </p>`,
        action: href(['orders', orderId, 'reconcile']),
        fields: {},
        button: 'check now',
        cancel: backToOrder(orderId),
      };
    },
    async (req, res, ctx, done) => {
      const orderId = orderIdOf(req);
      const schedule = options.checkSchedule;
      const reconciliation = options.reconciliation;
      const notDone = async (statusCode: number, failed: Html | string): Promise<ActionResult> => {
        const state = orderNowOf(await limited(res, () => readOrderStory(db, orderId)));
        return {
          status: statusCode,
          title: `Could not check order ${orderId}`,
          outcome: 'not_done',
          headline: html`the payment service was not asked, or gave no answer that could be used.`,
          facts: [
            { label: 'What failed', value: html`${failed}` },
            { label: 'What changed', value: NOTHING_CHANGED },
            { label: 'The order now', value: orderStatusNow(state, ctx) },
            { label: 'Next automatic check', value: nextCheck(state, ctx, schedule) },
          ],
          back: backToOrder(orderId),
        };
      };
      if (!reconciliation) {
        await done('refused', 'checks are off (PAYMENT_API_URL is not set)');
        return notDone(409, html`checks are off: ${setting('PAYMENT_API_URL')} is not set.`);
      }
      const checked = await limited(res, (clientLeft) => reconciliation.reconcileOrder(orderId, { clientLeft }));
      if ('problem' in checked) {
        await done(checked.problem, POS_PROBLEMS[checked.problem]);
        return notDone(409, withSettings(POS_PROBLEMS[checked.problem]));
      }
      if (checked.result !== 'unchanged' && checked.result !== 'repaired') {
        const failed = whatFailed(checked.result, checked.failure, schedule, checked.posId);
        await done(checked.result, failed);
        return notDone(checkStatus(checked.result, checked.failure), withSettings(failed));
      }
      const applied = checked.applied.map(said);
      const detail =
        checked.applied.length === 0
          ? 'nothing new'
          : `learnt ${checked.applied.map((s) => `${s.kind} ${s.status}`).join(', ')}`;
      await done(checked.result, detail);
      const state = orderNowOf(await limited(res, () => readOrderStory(db, orderId)));
      const ignored = [...checked.stale, ...checked.conflicts];
      return {
        status: 200,
        title: `Checked order ${orderId} with the payment service`,
        outcome: 'done',
        headline:
          applied.length === 0
            ? html`the payment service said nothing the service did not already have.`
            : html`the service learnt ${plural(applied.length, 'status', 'statuses')} whose notification never came.`,
        facts: [
          {
            label: 'The payment service says',
            value: checked.said.length === 0 ? html`nothing of the order` : listed(checked.said.map(said)),
          },
          {
            label: 'What changed',
            value:
              applied.length === 0
                ? NOTHING_CHANGED
                : html`recorded ${listed(applied)}, each ${term('learnt', 'learnt from the payment service')}, and
                  passed on to other
                  services.${
                    ignored.length > 0
                      ? html` Also recorded but ignored, being older than or contradicting what was kept:
                        ${listed(ignored.map(said))}.`
                      : ''
                  }`,
          },
          { label: 'The order now', value: orderStatusNow(state, ctx) },
          { label: 'Next automatic check', value: nextCheck(state, ctx, schedule) },
        ],
        back: backToOrder(orderId),
      };
    },
  );

  action(
    '/orders/:orderId/republish',
    onOrder('republish'),
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Send the events of order ${orderId} to other services again`,
        explanation: html`<p>
          Its ${term('events', 'events')} already passed on and still kept are sent again, in order, each with its
          original id: services that already have one ignore it. Nothing new is recorded. Events deleted after
          ${setting('OUTBOX_RETENTION')} cannot be sent again.
        </p>`,
        action: href(['orders', orderId, 'republish']),
        fields: {},
        button: 'send again',
        cancel: backToOrder(orderId),
      };
    },
    async (req, res, _ctx, done) => {
      const orderId = orderIdOf(req);
      const { republished } = await limited(res, () => republishOrderEvents(db, orderId));
      await done('done', `${republished} event(s) pending again`);
      return republished > 0
        ? {
            status: 200,
            title: `Sending the events of order ${orderId} again`,
            outcome: 'done',
            headline: html`${plural(republished, 'event')} will be passed on to other services again.`,
            facts: [
              {
                label: 'What changed',
                value: html`${republished === 1 ? 'it waits' : 'they wait'} for the broker again, with
                ${republished === 1 ? 'its' : 'their'} original ${republished === 1 ? 'id' : 'ids'}.`,
              },
              {
                label: 'What comes next',
                value: html`the broker takes them within seconds; if not, Needs attention says why.`,
              },
            ],
            back: backToOrder(orderId),
          }
        : {
            status: 200,
            title: `Nothing to send again for order ${orderId}`,
            outcome: 'not_done',
            headline: html`no event of this order that was passed on is still kept.`,
            facts: [
              {
                label: 'Why',
                value: html`none was written, none has been passed on yet, or they were deleted after
                ${setting('OUTBOX_RETENTION')}.`,
              },
              { label: 'What changed', value: NOTHING_CHANGED },
            ],
            back: backToOrder(orderId),
          };
    },
  );

  const quarantineIdOf = (req: Request): string => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    if (!ID.test(id)) throw new PageError(400, 'Bad id', 'A notification set aside has a number as its id.');
    return id;
  };

  action(
    '/quarantine/:id/retry',
    (req) => ({ action: 'quarantine_retry', target: `quarantine #${quarantineIdOf(req)}`, orderId: null }),
    (req) => {
      const id = quarantineIdOf(req);
      return {
        title: `Retry the notification set aside #${id}`,
        explanation: html`<p>
          What was received is read again. If it can be read now, it is recorded as if it had just arrived and is no
          longer set aside. If not, it stays as it is.
        </p>`,
        action: href(['quarantine', id, 'retry']),
        fields: {},
        button: 'retry it',
        cancel: { label: 'Cancel', href: href(['quarantine', id]) },
      };
    },
    async (req, res, _ctx, done) => {
      const id = quarantineIdOf(req);
      const result = await limited(res, () => retryOne(options.transactions, id, recording));
      await done(
        result.result,
        'detail' in result ? result.detail : '',
        result.result === 'recorded' ? result.orderId : undefined,
      );
      const recorded = result.result === 'recorded';
      return {
        status: result.result === 'not_found' ? 404 : 200,
        title: `Retried the notification set aside #${id}`,
        outcome: recorded ? 'done' : 'not_done',
        headline: recorded ? html`it could be read now and was recorded.` : html`it was not recorded.`,
        facts: [{ label: recorded ? 'What changed' : 'Why', value: retryLine(result) }],
        back: recorded ? backToOrder(result.orderId) : ATTENTION,
      };
    },
  );

  /** The bulk retry's filter, from its form, as its audit row names it. */
  const bulkFilterOf = (req: Request): { filter: QuarantineFilter; target: string } => {
    const reason = field(req, 'reason');
    const pos = field(req, 'pos');
    return {
      filter: quarantineFilterOf(reason, pos),
      target: `quarantine reason=${reason || 'any'} pos=${pos || 'any'}`,
    };
  };

  action(
    '/quarantine/retry',
    (req) => ({ action: 'quarantine_retry_all', target: bulkFilterOf(req).target, orderId: null }),
    async (req, res) => {
      const reason = param(req, 'reason');
      const pos = param(req, 'pos');
      const filter = quarantineFilterOf(reason, pos);
      const count = await limited(res, () => countOpenQuarantined(db, filter, BULK_RETRY_MAX));
      return {
        title: 'Retry the notifications set aside',
        explanation: html`<p>
            <strong>${count > BULK_RETRY_MAX ? `More than ${BULK_RETRY_MAX}` : count}</strong> notification(s) set aside
            match${reason ? html` the reason <code>${reason}</code>` : ''}${pos ? html` shop account <code>${pos}</code>` : ''}.
            At most ${BULK_RETRY_MAX} are retried at once, oldest first; retry again for the rest.
          </p>
          <p>
            Each is read again; one that can be read now is recorded as if it had just arrived, the others stay set
            aside.
          </p>`,
        action: href(['quarantine', 'retry']),
        fields: { reason, pos },
        button: `retry ${Math.min(count, BULK_RETRY_MAX)}`,
        cancel: ATTENTION,
      };
    },
    async (req, res, _ctx, done) => {
      const { filter } = bulkFilterOf(req);
      const results = await limited(res, async () => {
        const ids = await openQuarantinedIds(db, filter, BULK_RETRY_MAX);
        const done: RetryResult[] = [];
        for (const id of ids) {
          try {
            done.push(await retryOne(options.transactions, id, recording));
          } catch (error) {
            if (isDatabaseUnavailable(error)) throw error;
            done.push({ id, result: 'failed', detail: 'recording failed; nothing changed' });
          }
        }
        return done;
      });
      const recorded = results.filter((r) => r.result === 'recorded').length;
      await done(`${recorded} of ${results.length} recorded`);
      return {
        status: 200,
        title: 'Retried the notifications set aside',
        outcome: results.length > 0 && recorded === results.length ? 'done' : recorded > 0 ? 'partly' : 'not_done',
        headline: html`${recorded} of ${results.length} recorded.`,
        facts: [
          {
            label: 'What changed',
            value:
              recorded === 0
                ? NOTHING_CHANGED
                : html`${plural(recorded, 'notification')} recorded and no longer set aside; the others stay as they
                  were.`,
          },
        ],
        lines: results.map(retryLine),
        back: ATTENTION,
      };
    },
  );

  const nameOf = (req: Request): string => {
    const name = typeof req.params.name === 'string' ? req.params.name : '';
    if (!NAME.test(name)) throw new PageError(400, 'Bad name', 'A name is letters, digits and _@-, up to 64.');
    return name;
  };

  action(
    '/sessions/:name/end',
    (req) => ({ action: 'end_sessions', target: nameOf(req), orderId: null }),
    (req) => {
      const name = nameOf(req);
      return {
        title: `End every session of ${name}`,
        explanation: html`<p>
          Everyone signed in as <strong>${name}</strong>, in any browser, is signed out at their next request, on every
          replica. Their token still signs in: to keep them out, remove their entry from the console's tokens.
        </p>`,
        action: href(['sessions', name, 'end']),
        fields: {},
        button: 'end their sessions',
        cancel: { label: 'Back to who is signed in', href: href(['sessions']) },
      };
    },
    async (req, res, _ctx, done) => {
      const name = nameOf(req);
      const ended = await limited(res, () => endSessionsOf(db, name));
      await done('done', `${ended} session(s) ended`);
      return {
        status: 200,
        title: `Ended the sessions of ${name}`,
        outcome: 'done',
        headline: html`${plural(ended, 'session')} of ${name} ended: they sign in again to go on.`,
        facts: [{ label: 'What changed', value: html`${ended} session(s) ended, on every replica.` }],
        back: { label: 'Back to who is signed in', href: href(['sessions']) },
      };
    },
  );
}
