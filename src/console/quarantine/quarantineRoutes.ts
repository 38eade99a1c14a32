import type { Request, Router } from 'express';
import { isDatabaseUnavailable } from '../../database/databaseErrors';
import {
  countOpenQuarantined,
  openQuarantinedIds,
  quarantinedNotification,
  type QuarantineFilter,
} from '../../recording/quarantineQueries';
import { retryOne, type RetryResult } from '../../recording/quarantineRetry';
import { backToOrder, NOTHING_CHANGED, type Link } from '../actions/actionView';
import { confirmedActions, type ActionSettings } from '../actions/confirmedAction';
import type { Access } from '../frame/access';
import {
  field,
  ID,
  refusal,
  param,
  quarantineFilterOf,
  seesPersonalData,
  send,
  type ConsoleOptions,
} from '../frame/consoleRouting';
import { href, html, type Html } from '../frame/html';
import { orderLink, plural, value } from '../frame/parts';
import { setting } from '../frame/terms';
import { DELIVERY_OUTCOME_WORDS, quarantineReasonWords } from '../language/words';
import { quarantinePage } from './quarantineView';

/** Quarantined notifications one bulk retry takes at most; the rest wait for the next one. */
export const BULK_RETRY_MAX = 200;

const ATTENTION: Link = { label: 'Back to what needs attention', href: href(['attention']).at('set-aside') };

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

/** What the notifications set aside use of the console's options. */
export type QuarantineSettings = ActionSettings &
  Pick<ConsoleOptions, 'viewersSeePersonalData' | 'transactions' | 'eventSource' | 'paymentServiceTimeZone'>;

/** A notification set aside, and the actions that read one again (one, or every one a filter names). */
export function quarantineRoutes(router: Router, access: Access, settings: QuarantineSettings): void {
  const { db, limited, context } = settings;
  const options = settings;
  const action = confirmedActions(router, access, settings);
  // What a retried notification's events are built with, as the recorder's are.
  const recording = { eventSource: options.eventSource, paymentServiceTimeZone: options.paymentServiceTimeZone };

  router.get('/quarantine/:id', async (req, res, next) => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    // `/quarantine/retry` is the bulk retry's confirmation (below).
    if (!ID.test(id)) return next();
    const { viewer, data: found } = await access.readFor(req, res, 'viewer', async () => {
      const stored = await limited(res, () => quarantinedNotification(db, id));
      if (stored === null)
        throw refusal(404, 'not_found', 'Not found', `No notification set aside has the number ${id}.`);
      return stored;
    });
    send(
      res,
      200,
      quarantinePage(context(req, viewer), found, {
        personalData: seesPersonalData(viewer, settings.viewersSeePersonalData),
        canAct: viewer.role === 'operator',
      }),
    );
  });

  const quarantineIdOf = (req: Request): string => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    if (!ID.test(id)) throw refusal(400, 'bad_request', 'Bad id', 'A notification set aside has a number as its id.');
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
}
