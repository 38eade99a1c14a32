import type { QuarantineRow } from '../../recording/quarantineQueries';
import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { factValue, money, orderLink, plural, status, time, value } from '../frame/parts';
import { checkResultWords, quarantineReasonWords } from '../language/words';
import { conditions } from './attentionConditions';
import type { Attention } from './attentionQueries';
import { counted, SEVERITY_WORDS, type BoardOptions, type Condition } from './boardCondition';
import { unreachableWords } from './outsideConditions';

function board(lines: readonly Condition[], ctx: PageContext): Html {
  return html`<table class="board" data-testid="board">
    <caption>
      Each condition the service watches, the worst first.
    </caption>
    <thead>
      <tr>
        <th scope="col">State</th>
        <th scope="col">What</th>
        <th scope="col">Since</th>
        <th scope="col">For the shop</th>
        <th scope="col">What to do</th>
      </tr>
    </thead>
    <tbody>
      ${lines.map(
        (c) =>
          html`<tr id="line-${c.id}" class="line ${c.severity}" data-severity="${c.severity}">
            <td><span class="severity ${c.severity}">${SEVERITY_WORDS[c.severity]}</span></td>
            <td>
              <strong>${c.title}</strong><br />${c.now}
              ${c.link ? html`<br /><a href="${c.link.href}">${c.link.label}</a>` : ''}
            </td>
            <td>${c.since ? time(c.since, ctx) : html`<span class="muted">—</span>`}</td>
            <td>${c.meaning}</td>
            <td>${c.todo}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function quarantineTable(rows: readonly QuarantineRow[], ctx: PageContext, canAct: boolean): Html {
  return html`<table>
    <thead>
      <tr>
        <th scope="col">#</th>
        <th scope="col">Received</th>
        <th scope="col">Why</th>
        <th scope="col">Shop account</th>
        ${canAct ? html`<th scope="col">Act</th>` : ''}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (q) =>
          html`<tr>
            <td><a href="${href(['quarantine', q.id])}">#${q.id}</a></td>
            <td>${time(q.receivedAt, ctx)}</td>
            <td>${quarantineReasonWords(q.reason)}: ${value(q.detail)}</td>
            <td>${value(q.posId)}</td>
            ${canAct ? html`<td><a href="${href(['quarantine', q.id, 'retry'])}">Retry…</a></td>` : ''}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const none = html`<p>None.</p>`;

export function attentionPage(ctx: PageContext, a: Attention, options: BoardOptions & { canAct: boolean }): Html {
  const lines = conditions(a, ctx, options);
  const worst = lines[0]?.severity ?? 'ok';
  const act = lines.filter((l) => l.severity === 'critical' || l.severity === 'warning').length;
  return layout(
    'Needs attention',
    ctx,
    html`<h1>Needs attention</h1>
      <p class="summary ${worst}" data-testid="summary">
        ${act === 0 ? 'Nothing needs attention now.' : `${plural(act, 'condition')} need${act === 1 ? 's' : ''} attention.`}
        Checked ${time(ctx.now, ctx)}; reload the page to check again.
      </p>
      <div data-testid="attention">
        ${board(lines, ctx)}
        <h2 id="payment-api">The payment service, per shop account</h2>
        ${
          a.reachability.length === 0
            ? html`<p>No check has asked it anything yet.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Shop account</th>
                    <th scope="col">Its checks</th>
                    <th scope="col">Since</th>
                    <th scope="col">Last seen so</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.reachability.map(
                    (r) =>
                      html`<tr>
                        <td>${value(r.posId)}</td>
                        <td>
                          ${
                            r.state === 'answering'
                              ? 'answered'
                              : r.state === 'refused'
                                ? html`<span class="badge bad">credentials refused</span>`
                                : html`<span class="badge bad">cannot reach it</span>: ${unreachableWords(r.detail)}`
                          }
                        </td>
                        <td>${time(r.since, ctx)}</td>
                        <td>${time(r.confirmedAt, ctx)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="learnt">Statuses learnt by asking the payment service, last 24 hours</h2>
        ${
          a.learnt.length === 0
            ? none
            : html`<table data-testid="learnt">
                <thead>
                  <tr>
                    <th scope="col">Shop account</th>
                    <th scope="col">Statuses</th>
                    <th scope="col">Orders</th>
                    <th scope="col">The first</th>
                    <th scope="col">The latest</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.learnt.map(
                    (l) =>
                      html`<tr>
                        <td>${value(l.posId)}</td>
                        <td>${counted(l.statuses, 'status', 'statuses')}</td>
                        <td>${l.orders}</td>
                        <td>${time(l.first, ctx)}</td>
                        <td>${time(l.latest, ctx)}: ${orderLink(l.latestOrderId)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="events-waiting">Orders whose events wait for the broker</h2>
        ${
          a.waitingOrders.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Events waiting</th>
                    <th scope="col">Since</th>
                    <th scope="col">The broker’s last answer</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.waitingOrders.map(
                    (w) =>
                      html`<tr>
                        <td>${orderLink(w.orderId)}</td>
                        <td>${w.events}</td>
                        <td>${time(w.oldest, ctx)}</td>
                        <td>${w.lastError ?? html`<span class="muted">none yet</span>`}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="set-aside">Notifications set aside, not retried yet</h2>
        ${
          a.quarantined.length === 0
            ? none
            : html`${quarantineTable(a.quarantined, ctx, options.canAct)}${
                options.canAct ? html`<p><a href="/console/quarantine/retry">Retry all of them…</a></p>` : ''
              }`
        }
        <h2 id="contradictions">Contradictions and disagreements, last 7 days</h2>
        ${
          a.troubled.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Notification</th>
                    <th scope="col">What it did</th>
                    <th scope="col">Stated otherwise</th>
                    <th scope="col">Received</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.troubled.map(
                    (t) =>
                      html`<tr>
                        <td>${orderLink(t.orderId)}</td>
                        <td>
                          ${t.kind === 'refund' ? html`refund ${value(t.subjectId)} ` : ''}${status(t.kind, t.status)}
                        </td>
                        <td>${t.outcome === 'conflict' ? 'contradicts a final status' : 'recorded'}</td>
                        <td>
                          ${t.disagreements.map(
                            (d) =>
                              html`<code>${d.field}</code>: kept ${factValue(d.field, d.kept, t.currencyCode, ctx)},
                                received ${factValue(d.field, d.received, t.currencyCode, ctx)}<br />`,
                          )}
                        </td>
                        <td>${time(t.receivedAt, ctx)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="given-up">Orders whose checks were given up</h2>
        ${
          a.givenUp.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Given up</th>
                    <th scope="col">Checks</th>
                    <th scope="col">The last one</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.givenUp.map(
                    (g) =>
                      html`<tr>
                        <td>${orderLink(g.orderId)}</td>
                        <td>${time(g.givenUpAt, ctx)}</td>
                        <td>${g.attempts}</td>
                        <td>${checkResultWords(g.lastResult ?? '')}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="confirmation">Payments waiting for the shop’s confirmation</h2>
        ${
          a.confirmations.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Shop reference <span class="field">(extOrderId)</span></th>
                    <th scope="col">Amount</th>
                    <th scope="col">Waiting since</th>
                    <th scope="col">Deadline</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.confirmations.map(
                    (c) =>
                      html`<tr>
                        <td>${orderLink(c.orderId)}</td>
                        <td>${value(c.extOrderId)}</td>
                        <td>${money(ctx, c.totalAmount, c.currencyCode)}</td>
                        <td>${time(c.since, ctx)}</td>
                        <td>
                          ${
                            options.confirmWithinMs === null
                              ? html`<span class="muted">set in the payment service’s panel</span>`
                              : time(new Date(c.since.getTime() + options.confirmWithinMs), ctx)
                          }
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
      </div>`,
  );
}
