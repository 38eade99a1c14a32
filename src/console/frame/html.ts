import escapeHtml from 'escape-html';

/**
 * Typed HTML templates (docs/decisions/0013-console-templates.md): `html` is a tagged template whose every
 * interpolated value is escaped (escape-html, Express's own), unless it is already `Html` built by `html`
 * itself. A view is a function of a typed model, so a misspelled field fails tsc; nothing here ever emits a
 * value unescaped, and links are `Href` values, which only `href()` makes, from our own routes.
 *
 * Both types are nominal: each has a `#private` field, which only its own class can set, so no other value has
 * its type (an object literal such as `{ text: '<script>' }` fails tsc where an `Html` is expected) and `render`
 * can ask at run time whether a value was made here (`#text in value`): one made with `Object.create(Html.prototype)`
 * has the prototype but not the field, and is refused. Their constructors are private and their makers are handed
 * to this module alone by the static blocks: `new Html(untrusted)` fails tsc anywhere else, and lint refuses it and
 * casts to either type (local/html-by-tag-only).
 */

let makeHtml: (text: string) => Html;
let makeHref: (path: string) => Href;
let isHtml: (value: object) => value is Html;
let isHref: (value: object) => value is Href;

/** Markup: made only by `html` (which escaped every value in it). */
export class Html {
  readonly #text: string;

  static {
    makeHtml = (text) => new Html(text);
    isHtml = (value): value is Html => #text in value;
  }

  private constructor(text: string) {
    this.#text = text;
  }

  get text(): string {
    return this.#text;
  }

  toString(): string {
    return this.#text;
  }
}

/** A link to a page of the console: made only by `href` (fixed segments, values encoded). */
export class Href {
  readonly #path: string;

  static {
    makeHref = (path) => new Href(path);
    isHref = (value): value is Href => #path in value;
  }

  private constructor(path: string) {
    this.#path = path;
  }

  get path(): string {
    return this.#path;
  }

  /** The same page, at one of its parts (`#fragment`, encoded). */
  at(fragment: string): Href {
    return makeHref(`${this.#path}#${encodeURIComponent(fragment)}`);
  }

  toString(): string {
    return this.#path;
  }
}

/** What may be interpolated: text (escaped), numbers, links and markup made here, lists of those, or nothing. */
export type Interpolated = string | number | Html | Href | null | undefined | false | readonly Interpolated[];

/**
 * A value as markup: text escaped, markup and links only when this module made them. Any other object (a forgery
 * with Html's prototype, a value that slipped past the types) is refused: a page is never made with it.
 */
function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'string' || typeof value === 'number') return escapeHtml(String(value));
  if (Array.isArray(value)) return value.map(render).join('');
  if (isHtml(value)) return value.text;
  if (isHref(value)) return escapeHtml(value.path);
  throw new TypeError('html: an interpolated object is neither markup made by html`` nor a link made by href()');
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
