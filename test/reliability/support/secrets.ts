import { OTHER_KEY, SECOND_KEY } from '../../support/signing';

/**
 * Everything that must never reach a log line: the second keys, the Basic credential (plain and
 * base64), every signature the suite sent, the buyer's personal data and the broker password.
 * Every service the suite starts registers its log lines here; each scenario scans its own at the
 * end, and the last scenario scans them all.
 */
export const BASIC_USER = 'notify-sender';
export const BASIC_PASSWORD = 'Pw-7f3c1e9a-basic-secret';
export const BASIC_CREDENTIAL = `${BASIC_USER}:${BASIC_PASSWORD}`;
export const BASIC_HEADER = `Basic ${Buffer.from(BASIC_CREDENTIAL).toString('base64')}`;

/** A buyer whose every field is distinctive enough to be searched for in the logs. */
export const BUYER = {
  customerId: 'cust-5521907',
  email: 'zofia.wrzesniewska-reliability@example.test',
  phone: '+48 601 928 374',
  firstName: 'Zofiaxena',
  lastName: 'Wrzesniewska-Kowalczyk',
  language: 'pl',
};

const SIGNATURE_LENGTHS = [32, 40, 64, 96, 128];

/** Fields whose values the service logs on purpose (identifiers and the status): never a buyer's data. */
const LOGGED_FIELDS = new Set(['orderId', 'refundId', 'merchantPosId', 'status', 'customerIp']);
/** The shortest body value searched for, and the length of the windows a long value is searched by. */
const FRAGMENT_MIN = 8;
const FRAGMENT_WINDOW = 16;
const DATE_LIKE = /^\d{4}-\d{2}-\d{2}/;
const CONSTANT = /^[A-Z][A-Z0-9_]*$/;

/**
 * The pieces of a notification body a leak would show: every string value of at least FRAGMENT_MIN
 * characters with a letter in it (a long one by overlapping windows, so that a copy of any 24 characters
 * of it is found too), except the identifiers the service logs (and any piece of one) and timestamps. Not JSON: nothing (the raw bytes of a
 * fuzzed body are searched by their signature instead).
 */
export function bodyFragments(body: Buffer): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return [];
  }
  const fragments: string[] = [];
  const logged: string[] = [];
  // Iterative: the hostile scenario sends JSON nested 32,000 levels deep.
  const pending: Array<[unknown, string | null]> = [[parsed, null]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, field] = next;
    if (typeof value === 'string') {
      if (field !== null && LOGGED_FIELDS.has(field)) {
        logged.push(value.toLowerCase());
        continue;
      }
      if (value.length < FRAGMENT_MIN || !/\p{L}/u.test(value) || DATE_LIKE.test(value)) continue;
      // Constants such as COMPLETED or CARD_TOKEN are the API's vocabulary, in log lines by right.
      if (CONSTANT.test(value)) continue;
      const lower = value.toLowerCase();
      if (lower.length <= FRAGMENT_WINDOW) fragments.push(lower);
      else {
        for (let i = 0; i + FRAGMENT_WINDOW <= lower.length; i += FRAGMENT_WINDOW / 2)
          fragments.push(lower.slice(i, i + FRAGMENT_WINDOW));
        fragments.push(lower.slice(-FRAGMENT_WINDOW));
      }
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push([item, field]);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) pending.push([item, key]);
    }
  }
  // A window of a longer value (an extOrderId built from the order id) may be a logged identifier itself.
  return fragments.filter((fragment) => !logged.some((identifier) => identifier.includes(fragment)));
}

export interface Finding {
  service: string;
  secret: string;
  line: string;
}

export interface LogSource {
  label: string;
  logs: readonly string[];
  /** Peak RSS of the process the lines came from, when known. */
  readonly peakRssMb?: number;
}

class SecretRegistry {
  private readonly fixed = new Map<string, string>();
  private readonly signatures = new Set<string>();
  private readonly sources: LogSource[] = [];
  /** Body fragments by their first FRAGMENT_MIN characters, so that a line is scanned in one pass. */
  private readonly fragments = new Map<string, Set<string>>();
  private fragmentCount = 0;

  constructor() {
    this.add('second key of POS 300746', SECOND_KEY);
    this.add('second key of POS 145227', OTHER_KEY);
    this.add('Basic credential', BASIC_CREDENTIAL);
    this.add('Basic password', BASIC_PASSWORD);
    this.add('Basic header value', BASIC_HEADER.slice('Basic '.length));
    this.add('broker credential', 'guest:guest@');
    for (const [field, value] of Object.entries(BUYER)) if (field !== 'language') this.add(`buyer ${field}`, value);
  }

  add(label: string, value: string): void {
    this.fixed.set(value.toLowerCase(), label);
  }

  /** Registers the hex signature(s) of a signature header the suite sent. */
  addSignatureHeader(header: string): void {
    for (const match of header.matchAll(/signature\s*=\s*([0-9a-fA-F]{32,128})/g))
      this.signatures.add((match[1] as string).toLowerCase());
  }

  /** Registers the values of a notification body the suite sent (bodyFragments). */
  addBody(body: Buffer): void {
    for (const fragment of bodyFragments(body)) {
      const prefix = fragment.slice(0, FRAGMENT_MIN);
      const known = this.fragments.get(prefix) ?? new Set<string>();
      if (known.has(fragment)) continue;
      known.add(fragment);
      this.fragments.set(prefix, known);
      this.fragmentCount += 1;
    }
  }

  get bodyFragmentCount(): number {
    return this.fragmentCount;
  }

  get signatureCount(): number {
    return this.signatures.size;
  }

  get fixedCount(): number {
    return this.fixed.size;
  }

  register(source: LogSource): void {
    this.sources.push(source);
  }

  get allSources(): readonly LogSource[] {
    return this.sources;
  }

  scan(sources: readonly LogSource[]): { lines: number; findings: Finding[] } {
    const findings: Finding[] = [];
    let lines = 0;
    for (const source of sources) {
      for (const line of source.logs) {
        lines += 1;
        const lower = line.toLowerCase();
        for (const [value, label] of this.fixed) {
          if (lower.includes(value)) findings.push({ service: source.label, secret: label, line: line.slice(0, 300) });
        }
        const fragment = this.bodyFragmentIn(lower);
        if (fragment !== null)
          findings.push({ service: source.label, secret: `a body fragment (${fragment})`, line: line.slice(0, 300) });
        for (const run of lower.match(/[0-9a-f]{32,}/g) ?? []) {
          for (const length of SIGNATURE_LENGTHS) {
            for (let i = 0; i + length <= run.length; i += 1) {
              if (this.signatures.has(run.slice(i, i + length))) {
                findings.push({ service: source.label, secret: 'a request signature', line: line.slice(0, 300) });
              }
            }
          }
        }
      }
    }
    return { lines, findings };
  }

  private bodyFragmentIn(lower: string): string | null {
    for (let i = 0; i + FRAGMENT_MIN <= lower.length; i += 1) {
      const candidates = this.fragments.get(lower.slice(i, i + FRAGMENT_MIN));
      if (!candidates) continue;
      for (const candidate of candidates) if (lower.startsWith(candidate, i)) return candidate;
    }
    return null;
  }
}

export const secrets = new SecretRegistry();
