import { readableBody } from '../../domain/personalData';
import type { OrderStory, StoryNotification } from '../../orderStory/orderStoryQueries';
import { href, html, type Html } from '../html';
import { layout, time, type PageContext } from './layout';
import { auditTable } from './lists';

/** The order page: one order's whole story. */

const OUTCOME_MEANING: Record<StoryNotification['outcome'], string> = {
  applied: 'moved the projection',
  stale: 'stale: an earlier status than the one kept',
  conflict: 'conflicting with the status kept',
};

function viaBadge(via: StoryNotification['observedVia']): Html {
  return via === 'reconciliation'
    ? html` <span class="badge recon" title="read from the payment API; the sender never delivered it"
        >via reconciliation</span
      >`
    : html``;
}

interface TimelineEntry {
  at: Date;
  order: number;
  what: Html;
}

/** The order page: the whole story, oldest first. */
export function orderPage(
  ctx: PageContext,
  story: OrderStory,
  options: { personalData: boolean; canAct: boolean },
): Html {
  const { now } = ctx;
  const statusOf = new Map(story.notifications.map((n) => [n.id, n]));
  const timeline: TimelineEntry[] = [
    ...story.deliveries.map((d) => {
      const n = d.notificationId === null ? undefined : statusOf.get(d.notificationId);
      return {
        at: d.receivedAt,
        order: 1,
        what: html`Delivery of
          ${n ? html`<strong>${n.kind} ${n.status}</strong>` : 'a notification'}${
            d.observedVia === 'reconciliation'
              ? html` <span class="badge recon">via reconciliation</span> (read from the payment API)`
              : html` from ${d.sourceAddress ?? 'an unknown address'}`
          },
          POS ${d.posId}, key ${d.keyFingerprint}; we answered <code>200 {"outcome":"${d.outcome}"}</code>`,
      };
    }),
    ...story.notifications.map((n) => ({
      at: n.receivedAt,
      order: 0,
      what: html`Recorded ${n.kind} ${n.kind === 'refund' ? n.subjectId : ''} status <strong>${n.status}</strong>:
        ${OUTCOME_MEANING[n.outcome]}${viaBadge(n.observedVia)}${
          n.disagreements.length > 0
            ? html` <span class="badge bad">${n.disagreements.length} disagreement(s)</span>`
            : ''
        }`,
    })),
    ...story.events.map((e) => ({
      at: e.createdAt,
      order: 2,
      what: html`Event <code>${e.type}</code> #${e.sequence}
        ${
          e.publishedAt
            ? html`published
              ${time(e.publishedAt, now)}${e.unroutedAt ? html` <span class="badge">no queue took it</span>` : ''}`
            : html`<span class="badge bad">waiting for the broker</span>`
        }`,
    })),
    ...story.audit.map((a) => ({
      at: a.at,
      order: 3,
      what: html`Console: ${a.actor} ${a.action} → ${a.result}`,
    })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime() || a.order - b.order);

  const o = story.order;
  const orderIdPath = ['orders', story.orderId];
  return layout(
    `Order ${story.orderId}`,
    ctx,
    html`<h1>Order ${story.orderId}</h1>
      ${
        o
          ? html`<dl class="facts">
              <dt>Status</dt>
              <dd><strong>${o.status}</strong></dd>
              <dt>extOrderId</dt>
              <dd>${o.extOrderId ?? '—'}</dd>
              <dt>PAYMENT_ID</dt>
              <dd>${o.paymentId ?? '—'}</dd>
              <dt>POS</dt>
              <dd>${o.merchantPosId ?? '—'}</dd>
              <dt>Amount</dt>
              <dd>${o.totalAmount ?? '—'} ${o.currencyCode ?? ''} <span class="muted">(minor units)</span></dd>
              <dt>Pay method</dt>
              <dd>${o.payMethodType ?? '—'}</dd>
              <dt>First seen</dt>
              <dd>${time(o.createdAt, now)}</dd>
              <dt>Last change</dt>
              <dd>${time(o.updatedAt, now)}</dd>
            </dl>`
          : html`<p class="notice">No notification of this order itself has been recorded; only its refunds.</p>`
      }
      ${
        options.canAct
          ? html`<p>
              <a href="${href([...orderIdPath, 'reconcile'])}">Reconcile this order now…</a> ·
              <a href="${href([...orderIdPath, 'republish'])}">Re-publish its events…</a>
            </p>`
          : ''
      }
      <h2>Timeline</h2>
      <ol data-testid="timeline">
        ${timeline.map((t) => html`<li>${time(t.at, now)}: ${t.what}</li>`)}
      </ol>
      <h2>Events</h2>
      ${
        story.events.length === 0
          ? html`<p>No event of this order is in the outbox (none written, or deleted after OUTBOX_RETENTION).</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>#</th>
                  <th>Type</th>
                  <th>Written</th>
                  <th>Published</th>
                  <th>Attempts</th>
                  <th>Last error</th>
                </tr>
              </thead>
              <tbody>
                ${story.events.map(
                  (e) =>
                    html`<tr>
                      <td>${e.sequence}</td>
                      <td><code>${e.type}</code></td>
                      <td>${time(e.createdAt, now)}</td>
                      <td>
                        ${
                          e.publishedAt
                            ? html`${time(e.publishedAt, now)}${e.unroutedAt ? html`; no queue took it` : ''}`
                            : html`waiting;
                              ${e.nextAttemptAt ? html`next attempt ${time(e.nextAttemptAt, now)}` : 'due now'}`
                        }
                      </td>
                      <td>${e.attempts}</td>
                      <td>${e.lastError ?? ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      <h2>Reconciliation</h2>
      ${
        story.reconciliation
          ? html`<dl class="facts">
              <dt>Observed</dt>
              <dd>${time(story.reconciliation.observedAt, now)}</dd>
              <dt>Checks</dt>
              <dd>${story.reconciliation.attempts}</dd>
              <dt>Last check</dt>
              <dd>${time(story.reconciliation.lastCheckedAt, now)} ${story.reconciliation.lastResult ?? ''}</dd>
              <dt>Next check</dt>
              <dd>${time(story.reconciliation.nextCheckAt, now)}</dd>
              <dt>Given up</dt>
              <dd>
                ${story.reconciliation.givenUpAt ? html`<span class="badge bad">gave up</span> ${time(story.reconciliation.givenUpAt, now)}` : 'no'}
              </dd>
            </dl>`
          : html`<p>Not in the reconciliation schedule (final, or not checked yet).</p>`
      }
      ${disagreementsTable(story.notifications)}
      <h2>Refunds</h2>
      ${
        story.refunds.length === 0
          ? html`<p>No refund recorded.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>Refund</th>
                  <th>extRefundId</th>
                  <th>Status</th>
                  <th>Amount</th>
                  <th>Its statuses</th>
                </tr>
              </thead>
              <tbody>
                ${story.refunds.map(
                  (r) =>
                    html`<tr>
                      <td>${r.refundId}</td>
                      <td>${r.extRefundId ?? '—'}</td>
                      <td>${r.status}</td>
                      <td>${r.amount ?? '—'} ${r.currencyCode ?? ''}</td>
                      <td>
                        <ol>
                          ${story.notifications
                            .filter((n) => n.kind === 'refund' && n.subjectId === r.refundId)
                            .map(
                              (n) =>
                                html`<li>
                                  ${n.status}: ${OUTCOME_MEANING[n.outcome]}${viaBadge(n.observedVia)},
                                  ${time(n.receivedAt, now)}
                                </li>`,
                            )}
                        </ol>
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      <h2>Raw bodies</h2>
      ${story.notifications.map((n) => rawBody(n, story.purgedDays, options.personalData, now))}
      <h2>Audit</h2>
      ${auditTable(story.audit, now, false)}`,
  );
}

function disagreementsTable(notifications: readonly StoryNotification[]): Html {
  const rows = notifications.flatMap((n) => n.disagreements.map((d) => ({ n, d })));
  if (rows.length === 0) return html`<p>No disagreement with the facts kept.</p>`;
  return html`<h3>Disagreements</h3>
    <table>
      <thead>
        <tr>
          <th>Status</th>
          <th>Field</th>
          <th>Kept</th>
          <th>Received</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          ({ n, d }) =>
            html`<tr>
              <td>${n.kind} ${n.status}</td>
              <td>${d.field}</td>
              <td>${d.kept}</td>
              <td>${d.received}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function rawBody(n: StoryNotification, purgedDays: ReadonlyMap<string, Date>, personalData: boolean, now: Date): Html {
  const head = html`<h3>${n.kind} ${n.kind === 'refund' ? n.subjectId : ''} ${n.status}${viaBadge(n.observedVia)}</h3>
    <p>SHA-256 <code>${n.bodySha256}</code>, received ${time(n.receivedAt, now)}</p>`;
  if (n.body === null) {
    const purgedAt = purgedDays.get(n.receivedAt.toISOString().slice(0, 10));
    return html`${head}
      <p class="notice">Purged${purgedAt ? html` ${time(purgedAt, now)}` : ''} (BODY_RETENTION).</p>`;
  }
  const { readable, raw } = readableBody(n.body, { personalData });
  return html`${head}
    <details>
      <summary>Readable${personalData ? '' : ' (the buyer’s personal data redacted)'}</summary>
      <pre>${readable}</pre>
    </details>
    ${
      raw === null
        ? ''
        : html`<details>
            <summary>As received (${n.body.length} bytes)</summary>
            <pre>${raw}</pre>
          </details>`
    }`;
}
