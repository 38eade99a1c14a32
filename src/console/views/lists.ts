import { DELIVERY_OUTCOMES } from '../../domain/outcomes';
import type { Attention } from '../queries/attention';
import type { AuditRow } from '../../history/auditQueries';
import type { DeliveryRow } from '../../orderStory/orderStoryQueries';
import type { QuarantineRow } from '../../recording/quarantineQueries';
import { href, html, type Html } from '../html';
import { layout, orderLink, time, relative, type PageContext } from './layout';
import type { EventCondition } from '../../outbox/outboxQueries';

/** The lists: the audit log, what needs attention, the deliveries. */

export function auditTable(rows: readonly AuditRow[], now: Date, withOrder: boolean): Html {
  if (rows.length === 0) return html`<p data-testid="audit">Nothing recorded.</p>`;
  return html`<table data-testid="audit">
    <thead>
      <tr>
        <th>When</th>
        <th>Who</th>
        <th>Role</th>
        <th>Action</th>
        <th>Target</th>
        <th>Result</th>
        <th>Detail</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (a) =>
          html`<tr>
            <td>${time(a.at, now)}</td>
            <td>${a.actor}</td>
            <td>${a.role ?? '—'}</td>
            <td>${a.action}</td>
            <td>${withOrder && a.orderId !== null ? orderLink(a.orderId) : (a.target ?? '')}</td>
            <td>${a.result}</td>
            <td>${a.detail}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function auditPage(ctx: PageContext, rows: readonly AuditRow[], next: string | null): Html {
  return layout(
    'Audit',
    ctx,
    html`<h1>Audit trail</h1>
      <p class="muted">Every sign-in (failed ones too) and every action, newest first.</p>
      ${auditTable(rows, ctx.now, true)}
      ${next ? html`<p><a rel="next" href="${href(['audit'], { cursor: next })}">Older</a></p>` : ''}`,
  );
}

function quarantineTable(rows: readonly QuarantineRow[], now: Date, canAct: boolean): Html {
  return html`<table>
    <thead>
      <tr>
        <th>#</th>
        <th>Received</th>
        <th>Reason</th>
        <th>POS</th>
        <th>Detail</th>
        ${canAct ? html`<th></th>` : ''}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (q) =>
          html`<tr>
            <td>${q.id}</td>
            <td>${time(q.receivedAt, now)}</td>
            <td>${q.reason}</td>
            <td>${q.posId}</td>
            <td>${q.detail}</td>
            ${canAct ? html`<td><a href="${href(['quarantine', q.id, 'retry'])}">Retry…</a></td>` : ''}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function attentionPage(
  ctx: PageContext,
  a: Attention,
  options: { canAct: boolean; quietAfterMs: number },
): Html {
  const { now } = ctx;
  const quiet = a.lastDeliveryAt === null || now.getTime() - a.lastDeliveryAt.getTime() > options.quietAfterMs;
  return layout(
    'Needs attention',
    ctx,
    html`<h1>Needs attention</h1>
      <div data-testid="attention">
        <h2>Notifications from the sender</h2>
        ${
          quiet
            ? html`<p class="problem">
                No notification received
                ${a.lastDeliveryAt ? html`since ${time(a.lastDeliveryAt, now)}` : 'in the last days'}: longer than
                ${relative(new Date(now.getTime() - options.quietAfterMs), now).replace(' ago', '')}
                (CONSOLE_QUIET_AFTER).
              </p>`
            : html`<p>The last arrived ${time(a.lastDeliveryAt, now)}.</p>`
        }
        <h2>
          Quarantined notifications not yet retried
          (${a.quarantined.length === 50 ? '50 or more' : a.quarantined.length})
        </h2>
        ${
          a.quarantined.length === 0
            ? html`<p>None.</p>`
            : html`${quarantineTable(a.quarantined, now, options.canAct)}${
                options.canAct ? html`<p><a href="/console/quarantine/retry">Retry all open ones…</a></p>` : ''
              }`
        }
        <h2>Orders whose reconciliation gave up (${a.givenUp.length})</h2>
        ${
          a.givenUp.length === 0
            ? html`<p>None.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th>Order</th>
                    <th>Gave up</th>
                    <th>Checks</th>
                    <th>Last result</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.givenUp.map(
                    (g) =>
                      html`<tr>
                        <td>${orderLink(g.orderId)}</td>
                        <td>${time(g.givenUpAt, now)}</td>
                        <td>${g.attempts}</td>
                        <td>${g.lastResult ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2>Conflicts and disagreements, last 7 days (${a.troubled.length})</h2>
        ${
          a.troubled.length === 0
            ? html`<p>None.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th>Order</th>
                    <th>Notification</th>
                    <th>Outcome</th>
                    <th>Disagreements</th>
                    <th>Received</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.troubled.map(
                    (t) =>
                      html`<tr>
                        <td>${orderLink(t.orderId)}</td>
                        <td>${t.kind} ${t.kind === 'refund' ? t.subjectId : ''} ${t.status}</td>
                        <td>${t.outcome}</td>
                        <td>
                          ${t.disagreements.map((d) => html`${d.field}: kept ${d.kept}, received ${d.received}<br />`)}
                        </td>
                        <td>${time(t.receivedAt, now)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2>Events waiting for the broker</h2>
        ${waitingLine(a.waiting, now)}
        <h2>Events no queue took</h2>
        ${unroutedLine(a.unrouted, now)}
      </div>`,
  );
}

const counted = (c: EventCondition): string => (c.count > c.countBound ? `More than ${c.countBound}` : String(c.count));

function waitingLine(c: EventCondition, now: Date): Html {
  if (c.since === null) return html`<p>No event is waiting for the broker.</p>`;
  return html`<p>
    ${counted(c)} event(s) of ${c.orders} order(s) waiting for the broker; the oldest since ${time(c.since, now)}
    ${c.orderId === null ? '' : html`(order ${orderLink(c.orderId)})`}:
    ${c.lastReason === null ? 'not attempted yet' : html`last reason <code>${c.lastReason}</code>`}.
  </p>`;
}

function unroutedLine(c: EventCondition, now: Date): Html {
  if (c.since === null) return html`<p>Every event published was taken by a queue.</p>`;
  return html`<p>
    ${counted(c)} event(s) of ${c.orders} order(s) published since ${time(c.since, now)} with
    ${c.lastReason ?? 'no queue bound'}${c.orderId === null ? '' : html` (latest: order ${orderLink(c.orderId)})`}.
    Nothing waits for them; they stay in the feed (GET /events) until OUTBOX_RETENTION, for a team to replay.
  </p>`;
}

export interface DeliveriesQuery {
  outcome: string;
  pos: string;
  from: string;
  to: string;
}

export function deliveriesPage(
  ctx: PageContext,
  query: DeliveriesQuery,
  rows: readonly DeliveryRow[],
  orders: ReadonlyMap<string, string>,
  next: string | null,
): Html {
  const { now } = ctx;
  return layout(
    'Recent deliveries',
    ctx,
    html`<h1>Recent deliveries</h1>
      <form class="filters" action="/console/deliveries" method="get">
        <label
          >Outcome
          <select name="outcome">
            <option value="">any</option>
            ${DELIVERY_OUTCOMES.map(
              (o) => html`<option value="${o}" ${query.outcome === o ? html` selected` : ''}>${o}</option>`,
            )}
          </select></label
        >
        <label>POS <input name="pos" value="${query.pos}" size="10" maxlength="64" /></label>
        <label>From (UTC) <input name="from" value="${query.from}" placeholder="2026-11-27T00:00Z" size="22" /></label>
        <label>To (UTC) <input name="to" value="${query.to}" placeholder="now" size="22" /></label>
        <button type="submit">Filter</button>
      </form>
      ${
        rows.length === 0
          ? html`<p>No delivery matches.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>When</th>
                  <th>Order</th>
                  <th>From</th>
                  <th>POS</th>
                  <th>Key</th>
                  <th>We answered</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map((d) => {
                  const orderId = d.notificationId === null ? undefined : orders.get(d.notificationId);
                  return html`<tr>
                    <td>${time(d.receivedAt, now)}</td>
                    <td>${orderId ? orderLink(orderId) : d.quarantineId ? `quarantined #${d.quarantineId}` : '—'}</td>
                    <td>
                      ${
                        d.observedVia === 'reconciliation'
                          ? html`<span class="badge recon">via reconciliation</span>`
                          : (d.sourceAddress ?? '—')
                      }
                    </td>
                    <td>${d.posId}</td>
                    <td>${d.keyFingerprint}</td>
                    <td>${d.outcome}</td>
                  </tr>`;
                })}
              </tbody>
            </table>`
      }
      ${next ? html`<p><a rel="next" href="${href(['deliveries'], { ...query, cursor: next })}">Older</a></p>` : ''}`,
  );
}
