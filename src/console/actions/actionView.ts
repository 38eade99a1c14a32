import { href, html, type Href, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';

/** The action pages: a confirmation step, and a result that says what happened. */

/** A link to one of our pages: its words, and where it goes (made by href()). */
export interface Link {
  label: string;
  href: Href;
}

/** A confirmation step: what will happen, and a form that posts it with confirm=yes. */
export interface Confirmation {
  title: string;
  /** Sentences saying what the action does. */
  explanation: Html;
  /** Where the form posts: one of our routes. */
  action: Href;
  fields: Readonly<Record<string, string>>;
  button: string;
  /** Where Cancel goes: back where the person came from. */
  cancel: Link;
}

export function confirmPage(ctx: PageContext, c: Confirmation): Html {
  return layout(
    c.title,
    ctx,
    html`<h1>${c.title}</h1>
      ${c.explanation}
      <form action="${c.action}" method="post">
        ${Object.entries(c.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="confirm" value="yes" />
        <p>
          <button class="primary" type="submit">Confirm: ${c.button}</button>
          <a href="${c.cancel.href}">Cancel</a>
        </p>
      </form>`,
  );
}

/** Whether an action did what was asked. */
export type Outcome = 'done' | 'partly' | 'not_done';

/** What an action's result page says. */
export interface ActionResult {
  status: number;
  title: string;
  outcome: Outcome;
  /** What happened, in a sentence. */
  headline: Html;
  /** What failed, what changed, the status now, what comes next: each a line of its own. */
  facts: ReadonlyArray<{ label: string; value: Html }>;
  /** Details below, one per line (a bulk retry's notifications). */
  lines?: readonly Html[];
  back: Link;
}

const OUTCOME_WORDS: Record<Outcome, string> = { done: 'Done', partly: 'Partly done', not_done: 'Not done' };

export function resultPage(ctx: PageContext, r: ActionResult): Html {
  return layout(
    r.title,
    ctx,
    html`<h1>${r.title}</h1>
      <div data-testid="result" role="status">
        <p class="result ${r.outcome}" data-outcome="${r.outcome}">
          <strong>${OUTCOME_WORDS[r.outcome]}:</strong> ${r.headline}
        </p>
        <dl class="facts">
          ${r.facts.map(
            (f) =>
              html`<dt>${f.label}</dt>
                <dd>${f.value}</dd>`,
          )}
        </dl>
        ${
          r.lines && r.lines.length > 0
            ? html`<ul>
                ${r.lines.map((l) => html`<li>${l}</li>`)}
              </ul>`
            : ''
        }
      </div>
      <p><a href="${r.back.href}">${r.back.label}</a></p>`,
  );
}

/** An action's "what changed" when nothing did. */
export const NOTHING_CHANGED = html`Nothing: no status was recorded and no event was written.`;

export const backToOrder = (orderId: string): Link => ({ label: 'Back to the order', href: href(['orders', orderId]) });
