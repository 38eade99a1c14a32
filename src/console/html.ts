import escapeHtml from 'escape-html';

/**
 * Typed HTML templates (docs/decisions/0013-console-templates.md): `html` is a tagged template whose every
 * interpolated value is escaped (escape-html, Express's own), unless it is already `Html` built by `html`
 * itself. A view is a function of a typed model, so a misspelled field fails tsc; nothing here ever emits a
 * value unescaped, and links are `Href` values, which only `href()` makes, from our own routes.
 *
 * Both types have a private constructor and are made by this module alone (the static blocks hand it their
 * makers): `new Html(untrusted)` and `new Href(anything)` fail tsc anywhere else, and lint refuses them and casts
 * to them (local/html-by-tag-only).
 */

let makeHtml: (text: string) => Html;
let makeHref: (path: string) => Href;

/** Markup: made only by `html` (which escaped every value in it). */
export class Html {
  static {
    makeHtml = (text) => new Html(text);
  }

  private constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** A link to a page of the console: made only by `href` (fixed segments, values encoded). */
export class Href {
  static {
    makeHref = (path) => new Href(path);
  }

  private constructor(readonly path: string) {}

  /** The same page, at one of its parts (`#fragment`, encoded). */
  at(fragment: string): Href {
    return makeHref(`${this.path}#${encodeURIComponent(fragment)}`);
  }

  toString(): string {
    return this.path;
  }
}

/** What may be interpolated: text (escaped), numbers, links and markup made here, lists of those, or nothing. */
export type Interpolated = string | number | Html | Href | null | undefined | false | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (value instanceof Href) return escapeHtml(value.path);
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return makeHtml(out);
}

/** A path under /console: fixed segments, and values each through encodeURIComponent; query values likewise. */
export function href(segments: readonly string[], query: Readonly<Record<string, string | undefined>> = {}): Href {
  const path = `/console${segments.map((s) => `/${encodeURIComponent(s)}`).join('')}`;
  const params = Object.entries(query).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
  );
  return makeHref(params.length === 0 ? path : `${path}?${new URLSearchParams(params).toString()}`);
}
