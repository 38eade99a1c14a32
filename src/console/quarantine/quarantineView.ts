import { readableBody } from '../../domain/personalData';
import type { QuarantinedNotification } from '../../recording/quarantineQueries';
import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { shownAsText, time, value } from '../frame/parts';
import { setting, term } from '../frame/terms';
import { quarantineReasonWords } from '../language/words';

/** One notification set aside: why, when, whether it was retried, and what it held (redacted for viewers). */
export function quarantinePage(
  ctx: PageContext,
  q: QuarantinedNotification,
  options: { personalData: boolean; canAct: boolean },
): Html {
  const readable = q.body === null ? null : readableBody(q.body, { personalData: options.personalData });
  return layout(
    `Notification set aside #${q.id}`,
    ctx,
    html`<h1>Notification set aside #${q.id}</h1>
      <p>
        A genuine notification the service ${term('set-aside', 'could not read')}: it was kept apart and answered, so
        the payment service does not send it again.
      </p>
      <dl class="facts">
        <dt>Why</dt>
        <dd>${quarantineReasonWords(q.reason)} <span class="field">(${q.reason})</span>: ${value(q.detail)}</dd>
        <dt>Received</dt>
        <dd>${time(q.receivedAt, ctx)}</dd>
        <dt>Shop account (POS)</dt>
        <dd>${value(q.posId)}</dd>
        <dt>Now</dt>
        <dd>
          ${
            q.resolvedAt
              ? html`resolved ${time(q.resolvedAt, ctx)}: ${value(q.resolution ?? '')}`
              : html`<strong>still set aside</strong>`
          }
        </dd>
      </dl>
      ${
        options.canAct && !q.resolvedAt
          ? html`<p class="actions"><a href="${href(['quarantine', q.id, 'retry'])}">Retry it…</a></p>`
          : ''
      }
      <h2>What was received</h2>
      ${
        readable === null
          ? html`<p class="notice">Deleted, as ${setting('BODY_RETENTION')} says.</p>`
          : html`${
                options.personalData
                  ? ''
                  : html`<p class="notice" data-testid="redacted-notice">
                      The customer’s personal data is hidden for you, a viewer; an <strong>operator</strong> can open
                      the original, exactly as received.
                    </p>`
              }
              <pre class="body" tabindex="0">${shownAsText(readable.readable)}</pre>`
      }
      <p><a href="/console/attention#set-aside">Back to what needs attention</a></p>`,
  );
}
