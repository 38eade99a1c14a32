import type { Request, Router } from 'express';
import { CHECK_ACTION, type AuditAction } from '../../audit/auditQueries';
import { readOrderStory, type OrderStory } from '../../orderStory/orderStoryQueries';
import { republishOrderEvents } from '../../outbox/outboxQueries';
import type { OrderCheck } from '../../reconciliation/checkOrder';
import type { PosProblem } from '../../reconciliation/reconciliation';
import { backToOrder, NOTHING_CHANGED, type ActionResult } from '../actions/actionView';
import { confirmedActions, type ActionSettings, type AuditedAction } from '../actions/confirmedAction';
import type { Access } from '../frame/access';
import { orderIdOf, type ConsoleOptions } from '../frame/consoleRouting';
import { href, html, type Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { plural, status, time, value, withSettings } from '../frame/parts';
import { setting, term } from '../frame/terms';
import { checkStatus, nextCheck, whatFailed, type CheckState } from './checksView';

const POS_PROBLEMS: Record<PosProblem, string> = {
  pos_required:
    'nothing is recorded for this order and several shop accounts are set up, so the service cannot tell which one to ask with (the admin API takes a posId).',
  unknown_pos: 'no credentials are set up for this order’s shop account (PAYMENT_API_CREDENTIALS).',
  pos_mismatch: 'the order belongs to another shop account.',
};

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

/** What an order's actions use of the console's options. */
export type OrderActionSettings = ActionSettings & Pick<ConsoleOptions, 'reconciliation' | 'checkSchedule'>;

/** An order's actions: check it with the payment service now, and send its events to other services again. */
export function orderActionRoutes(router: Router, access: Access, settings: OrderActionSettings): void {
  const { db, limited } = settings;
  const options = settings;
  const action = confirmedActions(router, access, settings);

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
}
