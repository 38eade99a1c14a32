import type { Link } from '../actions/actionView';
import type { Html } from '../frame/html';
import { plural } from '../frame/parts';
import type { Bounded } from './attentionQueries';
/**
 * Needs attention, as a status board: one line per condition, worst first, each with its severity, since when,
 * what it means for the shop, what to do, and a link to the list behind it (below on the page, or another page).
 */

export type Severity = 'critical' | 'warning' | 'info' | 'ok';

export interface Condition {
  /** The anchor of its line, and of its list. */
  id: string;
  severity: Severity;
  title: Html;
  /** What is true now, in a sentence. */
  now: Html;
  since: Date | null;
  meaning: Html;
  todo: Html;
  link: Link | null;
}

export interface BoardOptions {
  quietAfterMs: number;
  /** CONSOLE_CONFIRM_WITHIN; null: not known. */
  confirmWithinMs: number | null;
  /** Checks with the payment service are on (PAYMENT_API_URL set). */
  checksOn: boolean;
}

export const SEVERITY_ORDER: Record<Severity, number> = { critical: 0, warning: 1, info: 2, ok: 3 };
export const SEVERITY_WORDS: Record<Severity, string> = {
  critical: 'Act now',
  warning: 'Look today',
  info: 'Good to know',
  ok: 'All well',
};

export const counted = (b: Bounded, one: string, many?: string): string =>
  b.more ? `more than ${b.count} ${many ?? `${one}s`}` : plural(b.count, one, many);

export const earliest = (dates: ReadonlyArray<Date | null>): Date | null =>
  dates.reduce<Date | null>((a, b) => (b === null ? a : a === null || b < a ? b : a), null);
