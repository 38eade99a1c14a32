import { html, type Href, type Html } from '../html';
import { layout, type PageContext } from './layout';

/** The action pages: a confirmation step and its result. */

/** A confirmation step: what will happen, and a form that posts it with confirm=yes. */
export interface Confirmation {
  title: string;
  /** Sentences saying what the action does. */
  explanation: Html;
  /** Where the form posts: one of our routes. */
  action: Href;
  fields: Readonly<Record<string, string>>;
  button: string;
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
          <button class="primary" type="submit">Confirm: ${c.button}</button> <a href="/console/attention">Cancel</a>
        </p>
      </form>`,
  );
}

export function resultPage(
  ctx: PageContext,
  title: string,
  lines: readonly Html[],
  back: { label: string; href: Href },
): Html {
  return layout(
    title,
    ctx,
    html`<h1>${title}</h1>
      <div data-testid="result" role="status">${lines.map((l) => html`<p>${l}</p>`)}</div>
      <p><a href="${back.href}">${back.label}</a></p>`,
  );
}
