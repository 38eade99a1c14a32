import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from '../database/errors';
import { republishOrderEvents } from '../outbox/outboxQueries';
import type { PosProblem } from '../reconciliation/reconciliation';
import { retryOne, type RetryResult } from '../recording/quarantineRetry';
import { countOpenQuarantined, openQuarantinedIds } from '../recording/quarantineQueries';
import {
  field,
  ID,
  orderIdOf,
  PageError,
  param,
  quarantineFilterOf,
  send,
  type ConsoleKit,
  type Signed,
} from './consoleRouting';
import { href, html, type Html } from './html';
import { confirmPage, resultPage, type Confirmation } from './views/actions';
import type { Viewer } from './views/layout';

/** Quarantined notifications one bulk retry takes at most; the rest wait for the next one. */
export const BULK_RETRY_MAX = 200;

const POS_PROBLEMS: Record<PosProblem, { status: number; message: string }> = {
  pos_required: {
    status: 409,
    message: 'Nothing is recorded for this order and several POS are configured: use the admin API with a posId.',
  },
  unknown_pos: { status: 409, message: 'No payment API credentials are configured for this order’s POS.' },
  pos_mismatch: { status: 409, message: 'The order belongs to another POS.' },
};

function retryLine(r: RetryResult): Html {
  if (r.result === 'recorded')
    return html`#${r.id}: recorded (${r.outcome}${r.notificationId ? `, notification #${r.notificationId}` : ''},
    ${r.eventsWritten} event(s)); resolved.`;
  if (r.result === 'still_unreadable') return html`#${r.id}: still unreadable (${r.reason}: ${r.detail}); left open.`;
  return html`#${r.id}: ${r.result.replace('_', ' ')} (${r.detail}).`;
}

/** The operators' actions, each a confirmation page and its POST: reconcile, re-publish, retry quarantined. */
export function actionRoutes(kit: ConsoleKit, { operatorOf }: Signed): void {
  const { router, options, db, limited, form, context, audit } = kit;

  /** A confirmed action: GET shows what it will do, POST with confirm=yes does it and says what happened. */
  const action = (
    path: string,
    confirm: (req: Request, res: Response, viewer: Viewer) => Confirmation | Promise<Confirmation>,
    act: (
      req: Request,
      res: Response,
      viewer: Viewer,
    ) => Promise<{ status: number; title: string; lines: Html[]; back: { label: string; href: string } }>,
  ): void => {
    router.get(path, async (req, res) => {
      const viewer = operatorOf(req, res);
      send(res, 200, confirmPage(context(req, viewer), await confirm(req, res, viewer)));
    });
    router.post(path, form, async (req, res) => {
      const viewer = operatorOf(req, res);
      if (field(req, 'confirm') !== 'yes')
        throw new PageError(
          400,
          'Not confirmed',
          'Nothing was done: the action needs its confirmation (confirm=yes), from its confirmation page.',
        );
      const result = await act(req, res, viewer);
      send(res, result.status, resultPage(context(req, viewer), result.title, result.lines, result.back));
    });
  };

  action(
    '/orders/:orderId/reconcile',
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Reconcile order ${orderId} now`,
        explanation: html`<p>
          The service asks the payment API for this order’s status and its refunds’ now, and records what it says as a
          notification would be recorded (marked “via reconciliation”). Nothing changes if it says nothing new.
        </p>`,
        action: href(['orders', orderId, 'reconcile']),
        fields: {},
        button: 'reconcile now',
      };
    },
    async (req, res, viewer) => {
      const orderId = orderIdOf(req);
      const reconciliation = options.reconciliation;
      if (!reconciliation) {
        await audit(viewer, 'reconcile', orderId, orderId, 'refused', 'reconciliation is off');
        throw new PageError(
          409,
          'Reconciliation is off',
          'PAYMENT_API_URL is not set: the service cannot ask the payment API.',
        );
      }
      const checked = await limited(res, (clientLeft) =>
        reconciliation.reconcileOrder(orderId, undefined, false, clientLeft),
      );
      if ('problem' in checked) {
        await audit(viewer, 'reconcile', orderId, orderId, checked.problem);
        const { status, message } = POS_PROBLEMS[checked.problem];
        throw new PageError(status, 'Cannot reconcile', message);
      }
      const detail = `applied ${checked.applied.length}, stale ${checked.stale.length}, conflicts ${checked.conflicts.length}`;
      await audit(viewer, 'reconcile', orderId, orderId, checked.result, detail);
      const said = checked.said
        .map((s) => (s.kind === 'refund' ? `refund ${s.id} ${s.status}` : `order ${s.status}`))
        .join(', ');
      return {
        status: checked.result === 'unavailable' ? 503 : 200,
        title: `Reconciled order ${orderId}`,
        lines: [
          html`Result: <strong>${checked.result}</strong>.`,
          html`The payment API says: ${said === '' ? 'nothing' : said}.`,
          html`Recorded: ${detail}.`,
        ],
        back: { label: 'Back to the order', href: href(['orders', orderId]) },
      };
    },
  );

  action(
    '/orders/:orderId/republish',
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Re-publish the events of order ${orderId}`,
        explanation: html`<p>
          Its events already published and still in the outbox are published again, in order, each with its original id,
          so consumers that already have them ignore them (they deduplicate by id). Nothing new is written. Events
          deleted after OUTBOX_RETENTION cannot be re-published.
        </p>`,
        action: href(['orders', orderId, 'republish']),
        fields: {},
        button: 're-publish',
      };
    },
    async (req, res, viewer) => {
      const orderId = orderIdOf(req);
      const { republished } = await limited(res, () => republishOrderEvents(db, orderId));
      await audit(viewer, 'republish', orderId, orderId, 'done', `${republished} event(s) pending again`);
      options.onEventsWritten();
      return {
        status: 200,
        title: `Re-published the events of order ${orderId}`,
        lines: [html`${republished} event(s) will be published again, with their original ids.`],
        back: { label: 'Back to the order', href: href(['orders', orderId]) },
      };
    },
  );

  const quarantineIdOf = (req: Request): string => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    if (!ID.test(id)) throw new PageError(400, 'Bad id', 'A quarantine id is a number.');
    return id;
  };

  action(
    '/quarantine/:id/retry',
    (req) => {
      const id = quarantineIdOf(req);
      return {
        title: `Retry quarantined notification #${id}`,
        explanation: html`<p>
          Its body is read again; if it now parses, it is recorded as a live delivery would be and the quarantine row is
          marked resolved, in one transaction. If not, it is left as it is.
        </p>`,
        action: href(['quarantine', id, 'retry']),
        fields: {},
        button: 'retry it',
      };
    },
    async (req, res, viewer) => {
      const id = quarantineIdOf(req);
      const result = await limited(res, () => retryOne(options.transactions, id, options.eventSource));
      await audit(
        viewer,
        'quarantine_retry',
        `quarantine #${id}`,
        result.result === 'recorded' ? result.orderId : null,
        result.result,
        'detail' in result ? result.detail : '',
      );
      if (result.result === 'recorded' && result.eventsWritten > 0) options.onEventsWritten();
      return {
        status: result.result === 'not_found' ? 404 : 200,
        title: `Retried quarantined notification #${id}`,
        lines: [retryLine(result)],
        back: { label: 'Back to what needs attention', href: '/console/attention' },
      };
    },
  );

  action(
    '/quarantine/retry',
    async (req, res) => {
      const reason = param(req, 'reason');
      const pos = param(req, 'pos');
      const filter = quarantineFilterOf(reason, pos);
      const count = await limited(res, () => countOpenQuarantined(db, filter, BULK_RETRY_MAX));
      return {
        title: 'Retry quarantined notifications',
        explanation: html`<p>
            <strong>${count > BULK_RETRY_MAX ? `More than ${BULK_RETRY_MAX}` : count}</strong> open quarantined
            notification(s)
            match${reason ? html` reason <code>${reason}</code>` : ''}${pos ? html` POS <code>${pos}</code>` : ''}. At
            most ${BULK_RETRY_MAX} are retried at once, oldest first; run it again for the rest.
          </p>
          <p>
            Each body is read again; one that now parses is recorded as a live delivery would be and resolved; the
            others are left open.
          </p>`,
        action: '/console/quarantine/retry',
        fields: { reason, pos },
        button: `retry ${Math.min(count, BULK_RETRY_MAX)}`,
      };
    },
    async (req, res, viewer) => {
      const reason = field(req, 'reason');
      const pos = field(req, 'pos');
      const filter = quarantineFilterOf(reason, pos);
      const results = await limited(res, async () => {
        const ids = await openQuarantinedIds(db, filter, BULK_RETRY_MAX);
        const done: RetryResult[] = [];
        for (const id of ids) {
          try {
            done.push(await retryOne(options.transactions, id, options.eventSource));
          } catch (error) {
            if (isDatabaseUnavailable(error)) throw error;
            done.push({ id, result: 'failed', detail: 'recording failed; nothing changed' });
          }
        }
        return done;
      });
      const recorded = results.filter((r) => r.result === 'recorded').length;
      const target = `quarantine reason=${reason || 'any'} pos=${pos || 'any'}`;
      await audit(viewer, 'quarantine_retry_all', target, null, `${recorded} of ${results.length} recorded`);
      if (recorded > 0) options.onEventsWritten();
      return {
        status: 200,
        title: 'Retried quarantined notifications',
        lines: [html`${recorded} of ${results.length} recorded.`, ...results.map(retryLine)],
        back: { label: 'Back to what needs attention', href: '/console/attention' },
      };
    },
  );
}
