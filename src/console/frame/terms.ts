import { html, type Html } from './html';
import { SETTING_WORDS } from '../language/words';

/** Links to the glossary: a word a page uses, and a setting it names (with what it does in its title). */

/** A link to a word of the glossary. */
export const term = (id: string, label: string | Html): Html =>
  html`<a class="term" href="/console/glossary#${id}">${label}</a>`;

/** A setting named on a page, with what it does in its title and the glossary. */
export const setting = (name: string): Html =>
  html`<a class="term" href="/console/glossary#setting-${name}" title="${SETTING_WORDS[name] ?? ''}"
    ><code>${name}</code></a
  >`;
