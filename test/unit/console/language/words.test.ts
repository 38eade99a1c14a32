import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LocalTime } from '../../../../src/console/language/localTime';
import { glossaryPage } from '../../../../src/console/glossary/glossaryView';
import {
  CHECK_RESULT_WORDS,
  DELIVERY_OUTCOME_WORDS,
  FIELD_WORDS,
  LEARNT_WORD,
  ORDER_STATUS_WORDS,
  QUARANTINE_REASON_WORDS,
  REFUND_STATUS_WORDS,
  SETTING_WORDS,
  TERMS,
  TRANSITION_WORDS,
} from '../../../../src/console/language/words';
import { DELIVERY_OUTCOMES, STATUS_TRANSITIONS } from '../../../../src/domain/outcomes';
import { CHECK_RESULTS } from '../../../../src/observability/reconciliationMetrics';
import { ORDER_STATUS_RANK, REFUND_STATUS_RANK } from '../../../../src/recording/statusRules';
import { ROOT } from '../../../support/build';

const VIEWS = path.join(ROOT, 'src', 'console');
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [readFileSync(path.join(dir, e.name), 'utf8')]
        : [],
  );

const glossary = glossaryPage({
  viewer: null,
  now: new Date(),
  clock: new LocalTime('UTC', 'en-GB'),
  paymentServiceTimeZone: 'Europe/Warsaw',
}).text;
const anchors = new Set([...glossary.matchAll(/id="([^"]+)"/g)].map((m) => m[1]));

describe('the console’s words', () => {
  it('When any order or refund status is shown, then it has words for the customer and for the shop', () => {
    for (const status of Object.keys(ORDER_STATUS_RANK)) {
      expect(ORDER_STATUS_WORDS[status]).toEqual({
        label: expect.any(String),
        customer: expect.any(String),
        shop: expect.any(String),
      });
      expect(anchors.has(`order-${status}`)).toBe(true);
    }
    for (const status of Object.keys(REFUND_STATUS_RANK)) {
      expect(REFUND_STATUS_WORDS[status]).toBeDefined();
      expect(anchors.has(`refund-${status}`)).toBe(true);
    }
  });

  it('When any outcome, transition, check result or reason is shown, then it has words and the glossary explains them', () => {
    for (const o of DELIVERY_OUTCOMES) expect(anchors.has(DELIVERY_OUTCOME_WORDS[o].id)).toBe(true);
    for (const t of STATUS_TRANSITIONS) expect(anchors.has(TRANSITION_WORDS[t].id)).toBe(true);
    for (const r of CHECK_RESULTS) expect(anchors.has(`check-${r}`) && CHECK_RESULT_WORDS[r].length > 0).toBe(true);
    for (const reason of ['invalid_utf8', 'not_json', 'too_deep', 'unknown_shape', 'invalid_field', 'unrecordable'])
      expect(anchors.has(`reason-${reason}`) && QUARANTINE_REASON_WORDS[reason] !== undefined).toBe(true);
    for (const w of [...Object.values(FIELD_WORDS), ...TERMS, LEARNT_WORD])
      expect([w.id, anchors.has(w.id)]).toEqual([w.id, true]);
  });

  it('When a page links a word or names a setting, then the glossary explains it', () => {
    const code = sources(VIEWS).join('\n');
    const linked = [...code.matchAll(/term\(\s*'([^'$]+)'/g)].map((m) => m[1] ?? '');
    expect(linked.length).toBeGreaterThan(10);
    for (const id of linked) expect([id, anchors.has(id)]).toEqual([id, true]);
    const settings = [...code.matchAll(/setting\('([A-Z_]+)'\)/g)].map((m) => m[1] ?? '');
    expect(settings.length).toBeGreaterThan(5);
    for (const name of settings) expect([name, SETTING_WORDS[name] !== undefined]).toEqual([name, true]);
  });
});
