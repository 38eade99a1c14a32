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
    for (const match of header.matchAll(/signature\s*=\s*([0-9a-fA-F]{32,128})/g)) this.signatures.add((match[1] as string).toLowerCase());
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
}

export const secrets = new SecretRegistry();
