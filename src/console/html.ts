import escapeHtml from 'escape-html';

/**
 * Typed HTML templates (docs/decisions/0013-console-templates.md): `html` is a tagged template whose every
 * interpolated value is escaped (escape-html, Express's own), unless it is already `Html` built by `html`
 * itself. A view is a function of a typed model, so a misspelled field fails tsc; nothing here ever emits a
 * value unescaped, and `href` values come only from `href()`, built from our own routes.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What may be interpolated: text (escaped), numbers, markup made here, lists of those, or nothing. */
export type Interpolated = string | number | Html | null | undefined | false | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(out);
}

/** A path under /console: fixed segments, and values each through encodeURIComponent; query values likewise. */
export function href(segments: readonly string[], query: Readonly<Record<string, string | undefined>> = {}): string {
  const path = `/console${segments.map((s) => `/${encodeURIComponent(s)}`).join('')}`;
  const params = Object.entries(query).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
  );
  return params.length === 0 ? path : `${path}?${new URLSearchParams(params).toString()}`;
}
