import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { deleteExchange, uniqueExchange } from '../../support/broker';
import { OTHER_KEY, OTHER_POS_ID, orderBody, refundBody, SECOND_KEY, sign, uniqueId } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { getJson, notificationHeaders, send, type HttpResult } from '../support/http';
import { rawRequest, RowCounter, slowClient, type RawResult } from '../support/rawHttp';
import { harness, seconds } from '../support/scenario';
import { BASIC_CREDENTIAL, BASIC_HEADER, BASIC_PASSWORD, BASIC_USER, BUYER, secrets } from '../support/secrets';
import { ServiceProcess } from '../support/serviceProcess';
import { scenarioDatabase } from '../support/store';

/** The service's own bounds (src/service.ts): headers within 10 s, the whole request within 15 s. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;
const SLOW_MARGIN_MS = 3_000;
const SLOW_GIVE_UP_MS = 30_000;
const FUZZ_RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 150);

export const HOSTILE: ScenarioDefinition = {
  id: 7,
  title: 'Hostile input',
  done:
    'Against a service with Basic auth and ALLOWED_SOURCE_IPS=127.0.0.1 (and a second one with the production allowlist for spoofing): ' +
    'random bytes, truncated JSON, invalid UTF-8, 32,000-level nesting, huge/negative/fractional/number amounts, odd timestamps and ' +
    'identifiers, __proto__/constructor keys, 10 MB bodies (declared and chunked), 1,000 headers, malformed HTTP on raw sockets, ' +
    'clients sending one byte a second, signature header variants, X-Forwarded-For/Forwarded/X-Real-IP spoofing, wrong Basic auth, ' +
    `and fast-check (${FUZZ_RUNS} runs each) over signature headers, arbitrary JSON and mutated realistic bodies, signed and unsigned. ` +
    'Each answer checked against the README, with the stored rows counted around every refused request.',
};

const SIGNATURE_CODES = [
  'missing_signature_header',
  'missing_signature',
  'invalid_signature_encoding',
  'unsupported_algorithm',
  'invalid_signature',
  'pos_mismatch',
];
const RECORDED = ['accepted', 'duplicate', 'stale', 'conflict', 'quarantined'];

const validOrder = (orderId = uniqueId('HOS'), status = 'PENDING'): string =>
  orderBody({ orderId, status, paymentId: '76258454' });
const code = (r: HttpResult): string | undefined => {
  try {
    return (JSON.parse(r.body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
};
const outcome = (r: HttpResult): string | undefined => {
  try {
    return (JSON.parse(r.body) as { outcome?: string }).outcome;
  } catch {
    return undefined;
  }
};
const describeResult = (r: HttpResult): string => `${r.status} ${r.error ?? r.body.slice(0, 120)}`;

/** Replaces `"@@RAW:<text>@@"` placeholders by raw JSON text (numbers JSON.stringify cannot write). */
const rawJson = (value: unknown): string =>
  JSON.stringify(value).replace(/"@@RAW:([^@]*)@@"/g, (_, text: string) => text);

const hexChar = fc.constantFrom(...'0123456789abcdefABCDEF'.split(''));
const headerChar = fc.constantFrom(
  ...' !#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~"\'='.split(''),
);

/**
 * The README's signature header rule, written here: `;`-separated `key=value` fields, names in any
 * case, values trimmed; algorithm MD5 when absent, one of MD5, SHA-1, SHA-256 (SHA), SHA-384, SHA-512
 * in any spelling; a field given twice with different values counts as absent.
 */
function referenceVerdict(header: string, body: Buffer): boolean {
  const fields = new Map<string, string[]>();
  for (const part of header.split(';')) {
    const field = part.trim();
    if (field === '') continue;
    const eq = field.indexOf('=');
    const name = (eq === -1 ? field : field.slice(0, eq)).trim().toLowerCase();
    const value = eq === -1 ? '' : field.slice(eq + 1).trim();
    fields.set(name, [...(fields.get(name) ?? []), value]);
  }
  const single = (name: string): string | undefined => {
    const values = fields.get(name);
    if (!values) return undefined;
    return values.every((v) => v === values[0]) ? values[0] : undefined;
  };
  const algorithmText = fields.has('algorithm') ? single('algorithm') : 'MD5';
  if (algorithmText === undefined) return false;
  const algorithm = { MD5: 'md5', SHA1: 'sha1', SHA: 'sha256', SHA256: 'sha256', SHA384: 'sha384', SHA512: 'sha512' }[
    algorithmText.toUpperCase().replace(/-/g, '')
  ];
  if (!algorithm) return false;
  const signature = single('signature');
  if (!signature) return false;
  return signature.toLowerCase() === createHash(algorithm).update(body).update(SECOND_KEY).digest('hex');
}

export function hostileScenario(report: RunReport): void {
  const h = harness(report, HOSTILE);
  describe(`${HOSTILE.id}. ${HOSTILE.title}`, () => {
    const database = scenarioDatabase('hostile');
    const prodDatabase = scenarioDatabase('hostprod');
    const services: ServiceProcess[] = [];
    let main: ServiceProcess;
    let prod: ServiceProcess;
    let rows: RowCounter;
    let prodRows: RowCounter;
    const answers: Array<{ label: string; status: number | null }> = [];
    let maxLatencyMs = 0;
    let slowHeaders: Promise<RawResult>;
    let slowBody: Promise<RawResult>;
    const exchange = uniqueExchange();

    afterAll(async () => {
      for (const s of services) await s.stop();
      await rows?.close();
      await prodRows?.close();
      await database.drop();
      await prodDatabase.drop();
      // The service declares its exchange (and its journal); with no consumer of ours to delete them, the scenario does.
      await deleteExchange(exchange);
    });

    const note = (label: string, status: number | null): void => {
      answers.push({ label, status });
    };

    /** POST to the main service (Basic auth and a correct signature unless overridden). */
    const post = async (
      label: string,
      body: Buffer | string,
      options: {
        signature?: string | null;
        basic?: string | null;
        headers?: Record<string, string | number | string[]>;
        port?: number;
        method?: string;
      } = {},
    ): Promise<HttpResult> => {
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
      const headers: Record<string, string | number | string[]> = {
        'Content-Type': 'application/json;charset=UTF-8',
        'Content-Length': bytes.length,
      };
      const signature =
        options.signature === undefined ? notificationHeaders(bytes)['OpenSvc-Signature'] : options.signature;
      if (signature !== null) headers['OpenSvc-Signature'] = signature as string;
      const basic = options.basic === undefined ? BASIC_HEADER : options.basic;
      if (basic !== null) headers.Authorization = basic;
      const result = await send({
        port: options.port ?? main.publicPort,
        method: options.method,
        body: bytes,
        headers: { ...headers, ...options.headers },
        timeoutMs: 20_000,
      });
      note(label, result.status);
      maxLatencyMs = Math.max(maxLatencyMs, result.ms);
      return result;
    };

    /** A refused request: the expected status (and code), and not one row more in the database. */
    const refused = async (
      problems: string[],
      label: string,
      status: number,
      expectedCode: string | string[] | null,
      request: () => Promise<HttpResult>,
      counter = rows,
    ): Promise<HttpResult> => {
      const before = await counter.total();
      const result = await request();
      const after = await counter.total();
      const codes = expectedCode === null ? null : Array.isArray(expectedCode) ? expectedCode : [expectedCode];
      if (result.status !== status || (codes !== null && !codes.includes(code(result) ?? ''))) {
        problems.push(
          `${label}: expected ${status}${codes ? ` ${codes.join('|')}` : ''}, got ${describeResult(result)}`,
        );
      }
      if (after !== before) problems.push(`${label}: refused but ${after - before} rows were written`);
      return result;
    };

    /** An authentic (signed) body: 200 with a recorded outcome (quarantined when it cannot be read). */
    const recorded = async (
      problems: string[],
      label: string,
      body: Buffer | string,
      outcomes: string[] = RECORDED,
      options: { signature?: string } = {},
    ): Promise<HttpResult> => {
      const result = await post(label, body, options);
      if (result.status !== 200 || !outcomes.includes(outcome(result) ?? ''))
        problems.push(`${label}: expected 200 ${outcomes.join('|')}, got ${describeResult(result)}`);
      return result;
    };

    h.check(
      'starts a service with Basic auth and one with the production source allowlist; two clients start sending one byte a second',
      async () => {
        main = await ServiceProcess.start({
          label: 'hostile',
          databaseUrl: database.url,
          exchange,
          env: { NOTIFY_BASIC_AUTH: BASIC_CREDENTIAL },
        });
        services.push(main);
        prod = await ServiceProcess.start({
          label: 'hostile-production-allowlist',
          databaseUrl: prodDatabase.url,
          exchange,
          env: { ALLOWED_SOURCE_IPS: 'production', RELAY_ENABLED: 'false' },
        });
        services.push(prod);
        rows = new RowCounter(database.url);
        prodRows = new RowCounter(prodDatabase.url);
        const body = validOrder();
        const signature = notificationHeaders(Buffer.from(body))['OpenSvc-Signature'] as string;
        const head = `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json;charset=UTF-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nAuthorization: ${BASIC_HEADER}\r\nOpenSvc-Signature: ${signature}\r\n\r\n`;
        slowHeaders = slowClient(main.publicPort, head, null, SLOW_GIVE_UP_MS);
        slowBody = slowClient(main.publicPort, head, body, SLOW_GIVE_UP_MS);
        expect(await rows.total()).toBe(0);
      },
    );

    h.check(
      'source address spoofing through X-Forwarded-For, Forwarded and X-Real-IP is refused with 403 (production allowlist, no trusted proxy)',
      async () => {
        const problems: string[] = [];
        const body = validOrder();
        const spoofs: Array<Record<string, string>> = [
          {},
          { 'X-Forwarded-For': '185.68.12.10' },
          { 'X-Forwarded-For': '185.68.12.10, 185.68.12.11' },
          { 'X-Forwarded-For': '::ffff:185.68.12.10' },
          { Forwarded: 'for=185.68.12.10' },
          { Forwarded: 'for="[::ffff:185.68.12.10]";proto=https' },
          { 'X-Real-IP': '185.68.12.10' },
          { 'True-Client-IP': '185.68.12.10', 'CF-Connecting-IP': '185.68.12.10', 'X-Client-IP': '185.68.12.10' },
          { 'X-Forwarded-For': '185.68.12.10', Forwarded: 'for=185.68.12.10', 'X-Real-IP': '185.68.12.10' },
        ];
        for (const headers of spoofs) {
          await refused(
            problems,
            `spoof ${JSON.stringify(headers)}`,
            403,
            'source_not_allowed',
            () => post('spoof', body, { port: prod.publicPort, basic: null, headers }),
            prodRows,
          );
        }
        h.figure('spoofing attempts', spoofs.length);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'wrong, missing or malformed Basic auth is refused with 401 invalid_basic_auth and a WWW-Authenticate challenge',
      async () => {
        const problems: string[] = [];
        const body = validOrder();
        const b64 = (s: string): string => Buffer.from(s).toString('base64');
        const variants: Array<[string, string | null]> = [
          ['missing', null],
          ['wrong password', `Basic ${b64(`${BASIC_USER}:wrong`)}`],
          ['wrong user', `Basic ${b64(`someone:${BASIC_PASSWORD}`)}`],
          ['credential plus a byte', `Basic ${b64(`${BASIC_CREDENTIAL}x`)}`],
          ['password only', `Basic ${b64(BASIC_PASSWORD)}`],
          ['not base64', 'Basic !!!not-base64!!!'],
          ['empty', 'Basic '],
          ['Bearer scheme', `Bearer ${b64(BASIC_CREDENTIAL)}`],
          ['plain text credential', `Basic ${BASIC_CREDENTIAL}`],
          ['10 KB value', `Basic ${'A'.repeat(10_000)}`],
        ];
        for (const [label, value] of variants) {
          const result = await refused(problems, `basic auth: ${label}`, 401, 'invalid_basic_auth', () =>
            post('basic', body, { basic: value }),
          );
          if (!/^Basic/i.test(String(result.headers['www-authenticate'] ?? '')))
            problems.push(`basic auth: ${label}: no WWW-Authenticate: Basic challenge`);
        }
        await recorded(problems, 'basic auth: the right credential', body, ['accepted']);
        const lower = await post('basic lower', validOrder(), { basic: BASIC_HEADER.replace('Basic', 'basic') });
        if (lower.status !== 200)
          problems.push(`basic auth: "basic" scheme in lower case: expected 200, got ${describeResult(lower)}`);
        h.figure('Basic auth variants', variants.length + 1);
        expect(problems).toEqual([]);
      },
    );

    h.check('other methods get 405; other media types and a Content-Encoding get 415; nothing is stored', async () => {
      const problems: string[] = [];
      const body = validOrder();
      for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
        const result = await refused(problems, `${method} /notifications`, 405, 'method_not_allowed', () =>
          post(method, method === 'GET' ? '' : body, { method }),
        );
        if (result.headers.allow !== 'POST')
          problems.push(`${method}: Allow header is ${String(result.headers.allow)}`);
      }
      for (const contentType of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json;charset=ISO-8859-1',
        'application/json; charset=utf-16',
        'multipart/form-data; boundary=x',
      ]) {
        await refused(problems, `Content-Type ${contentType}`, 415, 'unsupported_media_type', () =>
          post('ctype', body, { headers: { 'Content-Type': contentType } }),
        );
      }
      await refused(problems, 'no Content-Type', 415, 'unsupported_media_type', () =>
        send({
          port: main.publicPort,
          body: Buffer.from(body),
          headers: {
            'Content-Length': Buffer.byteLength(body),
            Authorization: BASIC_HEADER,
            'OpenSvc-Signature': notificationHeaders(Buffer.from(body))['OpenSvc-Signature'] as string,
          },
        }),
      );
      for (const encoding of ['gzip', 'deflate', 'br', 'gzip, identity']) {
        await refused(problems, `Content-Encoding ${encoding}`, 415, 'unsupported_content_encoding', () =>
          post('encoding', body, { headers: { 'Content-Encoding': encoding } }),
        );
      }
      expect(problems).toEqual([]);
    });

    h.check(
      'signature header variants: empty, repeated fields, unknown algorithm, non-hex, wrong key get 401 (431 when 100 KB long); valid spellings are accepted',
      async () => {
        const problems: string[] = [];
        const body = Buffer.from(validOrder());
        const md5 = /signature=([0-9a-f]+)/.exec(sign(body, SECOND_KEY))?.[1] as string;
        const sha256 = /signature=([0-9a-f]+)/.exec(sign(body, SECOND_KEY, 'SHA-256'))?.[1] as string;
        secrets.addSignatureHeader(`signature=${md5};signature=${sha256}`);
        const refusals: Array<[string, Record<string, string | string[]> | null, string]> = [
          ['no signature header', null, 'missing_signature_header'],
          ['empty', { 'OpenSvc-Signature': '' }, 'missing_signature_header'],
          ['blank', { 'OpenSvc-Signature': '   ' }, 'missing_signature_header'],
          [
            'no signature field',
            { 'OpenSvc-Signature': 'sender=checkout;algorithm=MD5;content=DOCUMENT' },
            'missing_signature',
          ],
          [
            'empty signature field',
            { 'OpenSvc-Signature': 'sender=checkout;signature=;algorithm=MD5' },
            'missing_signature',
          ],
          [
            'two different signatures',
            { 'OpenSvc-Signature': `signature=${md5};signature=${'0'.repeat(32)};algorithm=MD5` },
            'missing_signature',
          ],
          [
            'two different algorithms',
            { 'OpenSvc-Signature': `signature=${md5};algorithm=MD5;algorithm=SHA-256` },
            'unsupported_algorithm',
          ],
          [
            'unknown algorithm SHA3-256',
            { 'OpenSvc-Signature': `signature=${sha256};algorithm=SHA3-256` },
            'unsupported_algorithm',
          ],
          [
            'unknown algorithm CRC32',
            { 'OpenSvc-Signature': `signature=${md5};algorithm=CRC32` },
            'unsupported_algorithm',
          ],
          ['algorithm MD4', { 'OpenSvc-Signature': `signature=${md5};algorithm=MD4` }, 'unsupported_algorithm'],
          [
            'non-hex signature',
            { 'OpenSvc-Signature': `signature=${'z'.repeat(32)};algorithm=MD5` },
            'invalid_signature_encoding',
          ],
          [
            'hex of the wrong length',
            { 'OpenSvc-Signature': `signature=${md5}00;algorithm=MD5` },
            'invalid_signature_encoding',
          ],
          [
            'base64 signature',
            { 'OpenSvc-Signature': `signature=${Buffer.from(md5, 'hex').toString('base64')};algorithm=MD5` },
            'invalid_signature_encoding',
          ],
          [
            'MD5 signature declared as SHA-256',
            { 'OpenSvc-Signature': `signature=${md5};algorithm=SHA-256` },
            'invalid_signature_encoding',
          ],
          [
            'signature of other bytes',
            { 'OpenSvc-Signature': sign(Buffer.from(`${body.toString()} `), SECOND_KEY) },
            'invalid_signature',
          ],
          ['key of another POS than merchantPosId', { 'OpenSvc-Signature': sign(body, OTHER_KEY) }, 'pos_mismatch'],
          // Two header lines reach the service joined by ", ": "algorithm=MD5, sender=checkout" is then another algorithm value.
          [
            'the header twice',
            {
              'OpenSvc-Signature': [
                `sender=checkout;signature=${md5};algorithm=MD5`,
                `sender=checkout;signature=${md5};algorithm=MD5`,
              ],
            },
            'unsupported_algorithm',
          ],
          [
            'wrong OpenSvc-Signature beside a right X-OpenSvc-Signature',
            {
              'OpenSvc-Signature': `signature=${'1'.repeat(32)};algorithm=MD5`,
              'X-OpenSvc-Signature': `signature=${md5};algorithm=MD5`,
            },
            'invalid_signature',
          ],
        ];
        for (const [label, headers, expected] of refusals) {
          await refused(problems, `signature: ${label}`, 401, expected, () =>
            post('signature', body, { signature: null, headers: headers ?? {} }),
          );
        }
        const before = await rows.total();
        const long = await rawRequest(
          main.publicPort,
          `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nAuthorization: ${BASIC_HEADER}\r\n` +
            `OpenSvc-Signature: sender=checkout;signature=${md5};algorithm=MD5;content=${'A'.repeat(100_000)}\r\n\r\n${body.toString()}`,
          { chunkBytes: 4096, timeoutMs: 5_000 },
        );
        note('signature 100 KB', long.status);
        if (long.status !== 431)
          problems.push(`signature: 100 KB long: expected 431, got ${long.status ?? 'no answer'}`);
        if ((await rows.total()) !== before) problems.push('signature: 100 KB long: rows were written');
        const accepted: Array<[string, Record<string, string | string[]>]> = [
          ['no algorithm field (MD5)', { 'OpenSvc-Signature': `sender=checkout;signature=${md5}` }],
          ['upper-case hex', { 'OpenSvc-Signature': `signature=${md5.toUpperCase()};algorithm=MD5` }],
          [
            'fields in another order, spaces, trailing ;',
            { 'OpenSvc-Signature': ` content=DOCUMENT ; algorithm=md5 ;signature=${md5} ; sender=checkout;` },
          ],
          [
            'the same field twice',
            { 'OpenSvc-Signature': `signature=${md5};signature=${md5};algorithm=MD5;algorithm=MD5` },
          ],
          ['SHA-256', { 'OpenSvc-Signature': `signature=${sha256};algorithm=SHA-256` }],
          ['SHA alone', { 'OpenSvc-Signature': `signature=${sha256};algorithm=sha` }],
          [
            'only X-OpenSvc-Signature',
            { 'X-OpenSvc-Signature': `sender=checkout;signature=${md5};algorithm=MD5;content=DOCUMENT` },
          ],
        ];
        for (const [label, headers] of accepted) {
          const result = await post(`signature ok: ${label}`, body, { signature: null, headers });
          if (result.status !== 200) problems.push(`signature: ${label}: expected 200, got ${describeResult(result)}`);
        }
        const otherPos = Buffer.from(
          orderBody({ orderId: uniqueId('HOS'), status: 'PENDING', merchantPosId: OTHER_POS_ID }),
        );
        const other = await post('other POS', otherPos, { signature: sign(otherPos, OTHER_KEY) });
        secrets.addSignatureHeader(sign(otherPos, OTHER_KEY));
        if (other.status !== 200)
          problems.push(`signature: POS ${OTHER_POS_ID} with its own key: expected 200, got ${describeResult(other)}`);
        h.figure('signature header variants', refusals.length + 1 + accepted.length + 1);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      `arbitrary signature headers (fast-check, ${FUZZ_RUNS} runs): 200 exactly when the README's rule verifies them, else 401 with a documented code and nothing stored`,
      async () => {
        const stats = { ok: 0, refused: 0 };
        const junkField = fc.oneof(
          fc.constantFrom(
            'content=DOCUMENT',
            'content=',
            'foo=bar',
            '=',
            'signature',
            'algorithm',
            '',
            'sender=',
            'SIGNATURE=@md5',
          ),
          fc
            .constantFrom(
              'MD5',
              'md5',
              'SHA-256',
              'sha256',
              'SHA',
              'SHA-1',
              'sha1',
              'SHA-384',
              'SHA512',
              'sha-512',
              'SHA3-256',
              'CRC32',
              '',
              'MD 5',
            )
            .map((a) => `algorithm=${a}`),
          fc
            .oneof(
              fc.constantFrom('@correct', '@CORRECT', '@md5'),
              fc.string({ unit: hexChar, minLength: 32, maxLength: 32 }),
              fc.string({ unit: hexChar, minLength: 64, maxLength: 64 }),
              fc.string({ unit: headerChar, maxLength: 40 }),
            )
            .map((s) => `signature=${s}`),
          fc.string({ unit: headerChar, maxLength: 30 }),
        );
        const spellings: Record<string, string[]> = {
          MD5: ['MD5', 'md5', 'Md5'],
          'SHA-1': ['SHA-1', 'sha1', 'SHA1', 'Sha-1'],
          'SHA-256': ['SHA-256', 'sha256', 'SHA', 'sha', 'Sha-256'],
          'SHA-384': ['SHA-384', 'sha384', 'SHA384'],
          'SHA-512': ['SHA-512', 'sha-512', 'SHA512'],
        };
        // Half well-formed headers (right or nearly right), half free-form field soup.
        const wellFormed = fc
          .record({
            algorithm: fc.constantFrom(...Object.keys(spellings)),
            spelling: fc.nat(),
            omitAlgorithm: fc.boolean(),
            signature: fc.constantFrom(
              '@correct',
              '@correct',
              '@CORRECT',
              '@md5',
              '@correct;signature=@md5',
              '@correct;signature=@correct',
            ),
            extras: fc.array(junkField, { maxLength: 2 }),
            rotate: fc.nat(),
          })
          .map((r) => {
            const names = spellings[r.algorithm] as string[];
            const fields = [
              'sender=checkout',
              `signature=${r.signature}`,
              ...(r.omitAlgorithm ? [] : [`algorithm=${names[r.spelling % names.length]}`]),
              'content=DOCUMENT',
              ...r.extras,
            ];
            const k = r.rotate % fields.length;
            return {
              algorithm: r.omitAlgorithm ? 'MD5' : r.algorithm,
              fields: [...fields.slice(k), ...fields.slice(0, k)],
            };
          });
        const soup = fc.record({
          algorithm: fc.constantFrom(...Object.keys(spellings)),
          fields: fc.array(junkField, { maxLength: 6 }),
        });
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(wellFormed, soup),
            fc.constantFrom(';', '; ', ' ;', ';;'),
            async ({ algorithm, fields }, separator) => {
              const body = Buffer.from(validOrder());
              const correct = /signature=([0-9a-f]+)/.exec(sign(body, SECOND_KEY, algorithm))?.[1] as string;
              const md5 = /signature=([0-9a-f]+)/.exec(sign(body, SECOND_KEY))?.[1] as string;
              const header = fields
                .join(separator)
                .replace(/@correct/g, correct)
                .replace(/@CORRECT/g, correct.toUpperCase())
                .replace(/@md5/g, md5)
                .trim();
              secrets.addSignatureHeader(header);
              const verdict = header !== '' && referenceVerdict(header, body);
              const before = await rows.total();
              const result = await post('fuzz signature', body, {
                signature: null,
                headers: header === '' ? {} : { 'OpenSvc-Signature': header },
              });
              const after = await rows.total();
              if (verdict) {
                stats.ok += 1;
                expect([result.status, outcome(result)]).toEqual([200, 'accepted']);
              } else {
                stats.refused += 1;
                expect(result.status).toBe(401);
                expect(SIGNATURE_CODES).toContain(code(result));
                expect(after).toBe(before);
              }
            },
          ),
          { numRuns: FUZZ_RUNS, includeErrorInReport: true },
        );
        h.figure('fuzzed signature headers', `${stats.ok} verified, ${stats.refused} refused`);
      },
      90_000,
    );

    h.check(
      `random bytes, truncated JSON and invalid UTF-8 (fast-check, ${FUZZ_RUNS} runs each): unsigned 401 with nothing stored, signed 200 quarantined`,
      async () => {
        const problems: string[] = [];
        let quarantined = 0;
        await fc.assert(
          fc.asyncProperty(fc.uint8Array({ maxLength: 600 }), async (bytes) => {
            const body = Buffer.from(bytes);
            await refused(problems, `unsigned random bytes (${body.length})`, 401, 'invalid_signature', () =>
              post('random unsigned', body, {
                signature: `sender=checkout;signature=${'ab'.repeat(16)};algorithm=MD5`,
              }),
            );
            const r = await recorded(problems, `signed random bytes ${body.toString('hex').slice(0, 40)}`, body, [
              'quarantined',
              'duplicate',
            ]);
            if (outcome(r) === 'quarantined') quarantined += 1;
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          { numRuns: FUZZ_RUNS, includeErrorInReport: true },
        );
        await fc.assert(
          fc.asyncProperty(fc.nat(), async (cut) => {
            const full = validOrder();
            const body = Buffer.from(full).subarray(0, cut % full.length);
            await refused(problems, 'unsigned truncated JSON', 401, 'invalid_signature', () =>
              post('truncated unsigned', body, {
                signature: `sender=checkout;signature=${'cd'.repeat(16)};algorithm=MD5`,
              }),
            );
            const r = await recorded(problems, `signed JSON truncated at ${body.length}`, body, [
              'quarantined',
              'duplicate',
            ]);
            if (outcome(r) === 'quarantined') quarantined += 1;
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          { numRuns: FUZZ_RUNS, includeErrorInReport: true },
        );
        for (const bad of [
          [0xff],
          [0xc3, 0x28],
          [0xe2, 0x82],
          [0xed, 0xa0, 0x80],
          [0xf4, 0x90, 0x80, 0x80],
          [0xc0, 0xaf],
        ]) {
          const text = validOrder();
          const at = text.indexOf('"Order"') + 2;
          const body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at))]);
          await refused(problems, 'unsigned invalid UTF-8', 401, 'invalid_signature', () =>
            post('utf8 unsigned', body, { signature: `sender=checkout;signature=${'ef'.repeat(16)};algorithm=MD5` }),
          );
          const r = await recorded(problems, `signed invalid UTF-8 ${Buffer.from(bad).toString('hex')}`, body, [
            'quarantined',
          ]);
          if (outcome(r) === 'quarantined') quarantined += 1;
        }
        // The same unreadable body 20 times at once: one quarantined row, 20 deliveries, 20 answers 200.
        const same = Buffer.from(`{"order":${uniqueId('"Q')}"`);
        const quarantinedBefore = await rows.quarantined();
        const burst = await Promise.all(Array.from({ length: 20 }, () => post('quarantine burst', same)));
        const burstOutcomes = [...new Set(burst.map((r) => `${r.status} ${outcome(r) ?? code(r)}`))];
        if (burstOutcomes.join() !== '200 quarantined')
          problems.push(`20 copies of an unreadable body at once: ${burstOutcomes.join(', ')}`);
        if ((await rows.quarantined()) !== quarantinedBefore + 1)
          problems.push(
            `20 copies of an unreadable body at once: ${(await rows.quarantined()) - quarantinedBefore} quarantined rows`,
          );
        h.figure('random, truncated or non-UTF-8 bodies quarantined', quarantined);
        expect(problems).toEqual([]);
      },
      120_000,
    );

    h.check(
      `arbitrary JSON bodies (fast-check, ${FUZZ_RUNS} runs): unsigned 401 with nothing stored, signed 200 (recorded or quarantined)`,
      async () => {
        const problems: string[] = [];
        await fc.assert(
          fc.asyncProperty(fc.jsonValue({ maxDepth: 5 }), async (value) => {
            const body = Buffer.from(JSON.stringify(value) ?? 'null');
            await refused(problems, 'unsigned JSON', 401, 'invalid_signature', () =>
              post('json unsigned', body, { signature: `sender=checkout;signature=${'01'.repeat(16)};algorithm=MD5` }),
            );
            await recorded(problems, `signed JSON ${body.toString().slice(0, 60)}`, body);
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          { numRuns: FUZZ_RUNS, includeErrorInReport: true },
        );
        expect(problems).toEqual([]);
      },
      90_000,
    );

    h.check(
      'deeply nested JSON (as deep as the 64 KB BODY_LIMIT allows): unsigned 401, signed 200 quarantined, quickly',
      async () => {
        const problems: string[] = [];
        // As deep as a body within BODY_LIMIT (64 KB) gets: 32,000 levels of arrays, 10,900 of objects.
        const depth = 32_000;
        const objects = 10_900;
        const bodies: Array<[string, string]> = [
          ['arrays', `${'['.repeat(depth)}${']'.repeat(depth)}`],
          ['objects', `${'{"a":'.repeat(objects)}1${'}'.repeat(objects)}`],
          [
            'inside an order',
            `{"order":{"orderId":"${uniqueId('DEEP')}","status":"PENDING","merchantPosId":"300746","x":${'['.repeat(depth - 100)}${']'.repeat(depth - 100)}}}`,
          ],
          ['unclosed', '['.repeat(2 * depth)],
        ];
        let slowest = 0;
        for (const [label, text] of bodies) {
          await refused(problems, `unsigned nested ${label}`, 401, 'invalid_signature', () =>
            post('nested unsigned', text, { signature: `sender=checkout;signature=${'23'.repeat(16)};algorithm=MD5` }),
          );
          const r = await recorded(problems, `signed nested ${label}`, text, ['quarantined']);
          slowest = Math.max(slowest, r.ms);
        }
        h.figure('32,000-level nesting answered within', seconds(slowest));
        expect(problems).toEqual([]);
        expect(slowest).toBeLessThan(5_000);
        main.assertAlive();
      },
    );

    h.check(
      'amounts: huge, negative, fractional, or JSON numbers are accepted exactly or quarantined, never 5xx',
      async () => {
        const problems: string[] = [];
        // [raw JSON of totalAmount, outcomes allowed, stored value when accepted]
        const cases: Array<[string, string[], string | null]> = [
          ['15000', ['accepted'], '15000'],
          ['"15000"', ['accepted'], '15000'],
          ['"0015000"', ['accepted'], '15000'],
          ['"999999999999999999"', ['accepted'], '999999999999999999'],
          ['null', ['accepted'], null],
          ['1.5e3', ['accepted', 'quarantined'], '1500'],
          ['9007199254740993', ['quarantined'], null],
          ['123456789012345678901234567890', ['quarantined'], null],
          ['"123456789012345678901234567890"', ['quarantined'], null],
          ['1e400', ['quarantined'], null],
          ['-1e400', ['quarantined'], null],
          ['-100', ['quarantined'], null],
          ['"-100"', ['quarantined'], null],
          ['-0', ['accepted', 'quarantined'], '0'],
          ['10.5', ['quarantined'], null],
          ['"10.50"', ['quarantined'], null],
          ['"1e3"', ['quarantined'], null],
          ['"0x10"', ['quarantined'], null],
          ['""', ['quarantined'], null],
          ['true', ['quarantined'], null],
          ['{}', ['quarantined'], null],
          ['[15000]', ['quarantined'], null],
          ['"١٥٠٠٠"', ['quarantined'], null],
        ];
        for (const [raw, outcomes, stored] of cases) {
          const orderId = uniqueId('AMT');
          const text = orderBody({ orderId, status: 'PENDING', totalAmount: '@@AMOUNT@@' }).replace(
            '"@@AMOUNT@@"',
            raw,
          );
          const r = await recorded(problems, `order.totalAmount ${raw}`, text, outcomes);
          if (outcome(r) === 'accepted') {
            const view = await getJson<{ totalAmount: string | null }>(main.adminPort, `/orders/${orderId}`);
            if (view.body?.totalAmount !== stored)
              problems.push(
                `order.totalAmount ${raw}: stored ${String(view.body?.totalAmount)}, expected ${String(stored)}`,
              );
          }
          const refundId = uniqueId('RAMT');
          const refund = refundBody({ orderId, refundId, status: 'FINALIZED', amount: '@@AMOUNT@@' }).replace(
            '"@@AMOUNT@@"',
            raw,
          );
          const rr = await recorded(problems, `refund.amount ${raw}`, refund, outcomes);
          if (outcome(rr) === 'accepted') {
            const view = await getJson<{ amount: string | null }>(main.adminPort, `/refunds/${refundId}`);
            if (view.body?.amount !== stored)
              problems.push(`refund.amount ${raw}: stored ${String(view.body?.amount)}, expected ${String(stored)}`);
          }
        }
        h.figure('amount variants', cases.length * 2);
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'odd timestamps and identifiers (epoch beyond the Date range, lone surrogates, control characters, very long) are accepted or quarantined, never 5xx',
      async () => {
        const problems: string[] = [];
        const order = (mutate: (o: Record<string, unknown>, root: Record<string, unknown>) => void): string => {
          const root = JSON.parse(
            orderBody({
              orderId: uniqueId('ODD'),
              status: 'COMPLETED',
              paymentId: '1',
              payMethodType: 'CARD_TOKEN',
              buyer: BUYER,
            }),
          ) as Record<string, unknown>;
          mutate(root.order as Record<string, unknown>, root);
          return rawJson(root);
        };
        const refund = (mutate: (r: Record<string, unknown>, root: Record<string, unknown>) => void): string => {
          const root = JSON.parse(
            refundBody({ orderId: uniqueId('ODD'), refundId: uniqueId('ODR'), status: 'FINALIZED' }),
          ) as Record<string, unknown>;
          mutate(root.refund as Record<string, unknown>, root);
          return rawJson(root);
        };
        const cases: Array<[string, string]> = [
          [
            'localReceiptDateTime 2^53-1 (number, beyond the Date range)',
            order((_, r) => (r.localReceiptDateTime = 9007199254740991)),
          ],
          [
            'localReceiptDateTime 8640000000000001 (number)',
            order((_, r) => (r.localReceiptDateTime = 8640000000000001)),
          ],
          [
            'localReceiptDateTime "999999999999999" (15-digit epoch string)',
            order((_, r) => (r.localReceiptDateTime = '999999999999999')),
          ],
          ['localReceiptDateTime -1', order((_, r) => (r.localReceiptDateTime = -1))],
          ['localReceiptDateTime 1.5', order((_, r) => (r.localReceiptDateTime = 1.5))],
          [
            'localReceiptDateTime "2020-02-30T25:61:00"',
            order((_, r) => (r.localReceiptDateTime = '2020-02-30T25:61:00')),
          ],
          [
            'localReceiptDateTime "+275760-09-13T00:00:00.001Z"',
            order((_, r) => (r.localReceiptDateTime = '+275760-09-13T00:00:00.001Z')),
          ],
          ['refund.statusDateTime 9007199254740991', refund((x) => (x.statusDateTime = 9007199254740991))],
          ['refund.refundDate "99999999999999"', refund((x) => (x.refundDate = '99999999999999'))],
          ['orderId with a lone high surrogate', order((o) => (o.orderId = `${uniqueId('SUR')}\ud800`))],
          ['extOrderId with a lone low surrogate', order((o) => (o.extOrderId = 'ext-\udc00-x'))],
          ['payMethod.type with a lone surrogate', order((o) => (o.payMethod = { type: 'CARD\ud83d' }))],
          ['refund.reasonDescription with a lone surrogate', refund((x) => (x.reasonDescription = 'zwrot \udfff'))],
          ['refund.refundId with a lone surrogate', refund((x) => (x.refundId = `${uniqueId('SUR')}\ud801`))],
          ['orderId with NUL', order((o) => (o.orderId = `${uniqueId('NUL')}\u0000`))],
          ['orderId with U+001F', order((o) => (o.orderId = `${uniqueId('US')}\u001f1`))],
          ['orderId with a right-to-left override', order((o) => (o.orderId = `${uniqueId('RTL')}\u202e`))],
          ['orderId of 257 characters', order((o) => (o.orderId = `${uniqueId('LONG')}${'x'.repeat(257)}`))],
          ['orderId as a number', order((o) => (o.orderId = Date.now() * 100 + Math.floor(Math.random() * 100)))],
          ['orderId 1e400', order((o) => (o.orderId = '@@RAW:1e400@@'))],
          ['orderId with emoji', order((o) => (o.orderId = `${uniqueId('EMO')}😀`))],
          ['status lower case', order((o) => (o.status = 'completed'))],
          ['status NEW', order((o) => (o.status = 'NEW'))],
          ['currencyCode "pln"', order((o) => (o.currencyCode = 'pln'))],
          [
            'reasonDescription of 60 KB (BODY_LIMIT is 64 KB)',
            refund((x) => (x.reasonDescription = 'y'.repeat(60_000))),
          ],
          ['buyer as a string', order((o) => (o.buyer = 'not an object'))],
          ['properties as an object', order((_, r) => (r.properties = { name: 'PAYMENT_ID', value: '1' }))],
          ['both order and refund', order((_, r) => (r.refund = { refundId: '1', status: 'FINALIZED' }))],
        ];
        for (const [label, text] of cases) await recorded(problems, label, text, ['accepted', 'quarantined']);
        h.figure('odd field values', cases.length);
        expect(problems).toEqual([]);
      },
    );

    h.check('__proto__ and constructor keys are plain data: real fields win, nothing is polluted', async () => {
      const problems: string[] = [];
      const orderId = uniqueId('PROTO');
      const text =
        `{"__proto__":{"polluted":"yes","order":{"orderId":"X"}},"constructor":{"prototype":{"polluted":"yes"}},` +
        `"order":{"orderId":"${orderId}","merchantPosId":"300746","status":"PENDING","totalAmount":"100","currencyCode":"PLN",` +
        `"__proto__":{"status":"COMPLETED","totalAmount":"1"},"constructor":{"name":"x"},"hasOwnProperty":"no","toString":1},` +
        `"properties":[{"__proto__":{"name":"PAYMENT_ID"},"name":"PAYMENT_ID","value":"42"}]}`;
      await recorded(problems, '__proto__ beside real fields', text, ['accepted']);
      const view = await getJson<{ status: string; totalAmount: string; paymentId: string }>(
        main.adminPort,
        `/orders/${orderId}`,
      );
      if (view.body?.status !== 'PENDING' || view.body.totalAmount !== '100' || view.body.paymentId !== '42')
        problems.push(`__proto__: projection ${JSON.stringify(view.body)}`);
      await recorded(
        problems,
        'order only under __proto__',
        `{"__proto__":{"order":{"orderId":"${uniqueId('PROTO')}","status":"PENDING"}}}`,
        ['quarantined'],
      );
      await recorded(
        problems,
        'refund only under constructor',
        `{"constructor":{"refund":{"refundId":"1","status":"FINALIZED"}},"orderId":"${uniqueId('PROTO')}"}`,
        ['quarantined'],
      );
      await recorded(
        problems,
        'status under __proto__ only',
        `{"order":{"orderId":"${uniqueId('PROTO')}","merchantPosId":"300746","__proto__":{"status":"PENDING"}}}`,
        ['quarantined'],
      );
      await refused(problems, 'unsigned __proto__', 401, 'invalid_signature', () =>
        post('proto unsigned', text, { signature: `sender=checkout;signature=${'45'.repeat(16)};algorithm=MD5` }),
      );
      expect(problems).toEqual([]);
    });

    h.check(
      `mutated realistic bodies (fast-check, ${FUZZ_RUNS} runs): any field replaced by any value is recorded or quarantined, never 5xx`,
      async () => {
        const stats = new Map<string, number>();
        const orderPaths: Array<Array<string | number>> = [
          ['order'],
          ['order', 'orderId'],
          ['order', 'extOrderId'],
          ['order', 'merchantPosId'],
          ['order', 'status'],
          ['order', 'totalAmount'],
          ['order', 'currencyCode'],
          ['order', 'payMethod'],
          ['order', 'payMethod', 'type'],
          ['order', 'buyer'],
          ['order', 'buyer', 'email'],
          ['order', 'products'],
          ['properties'],
          ['properties', 0],
          ['properties', 0, 'value'],
          ['localReceiptDateTime'],
          ['refund'],
        ];
        const refundPaths: Array<Array<string | number>> = [
          ['orderId'],
          ['extOrderId'],
          ['refund'],
          ['refund', 'refundId'],
          ['refund', 'extRefundId'],
          ['refund', 'amount'],
          ['refund', 'status'],
          ['refund', 'currencyCode'],
          ['refund', 'statusDateTime'],
          ['refund', 'refundDate'],
          ['refund', 'reason'],
          ['refund', 'reasonDescription'],
          ['order'],
        ];
        const nasty = fc.oneof(
          { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
          { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
          {
            weight: 2,
            arbitrary: fc.constantFrom<unknown>(
              '',
              ' ',
              '\u0000',
              '\ud800',
              'A\udfffB',
              '\u001f',
              'x'.repeat(5000),
              '😀',
              'COMPLETED',
              'CANCELED',
              'pending',
              '-1',
              '0x10',
              '١٢٣',
              '\u202e',
              '2020-02-13T10:25:40.528+01:00',
              '1581585940528',
              null,
              true,
              [],
              {},
              '@@RAW:1e400@@',
              '@@RAW:-0@@',
              '@@RAW:123456789012345678901234567890@@',
              '@@RAW:9007199254740993@@',
              '@@RAW:-1@@',
              '@@RAW:0.1@@',
              '@@RAW:8640000000000001@@',
              '@@RAW:9007199254740991@@',
            ),
          },
          { weight: 1, arbitrary: fc.constant('@@DELETE@@') },
        );
        await fc.assert(
          fc.asyncProperty(fc.boolean(), fc.nat(), nasty, async (isOrder, pathIndex, value) => {
            const orderId = uniqueId('MUT');
            const root = JSON.parse(
              isOrder
                ? orderBody({
                    orderId,
                    status: 'COMPLETED',
                    paymentId: '76258454',
                    payMethodType: 'CARD_TOKEN',
                    localReceiptDateTime: '2026-11-01T10:05:00.123+01:00',
                    buyer: BUYER,
                  })
                : refundBody({ orderId, refundId: uniqueId('MUTR'), status: 'FINALIZED', extRefundId: 'shop-1' }),
            ) as Record<string, unknown>;
            const paths = isOrder ? orderPaths : refundPaths;
            const path = paths[pathIndex % paths.length] as Array<string | number>;
            let target: Record<string | number, unknown> = root;
            for (const key of path.slice(0, -1)) {
              const next = target[key];
              if (typeof next !== 'object' || next === null) break;
              target = next as Record<string | number, unknown>;
            }
            const last = path[path.length - 1] as string | number;
            if (value === '@@DELETE@@') delete target[last];
            else target[last] = value;
            const text = rawJson(root);
            const result = await post('mutated', text);
            const label = `${path.join('.')} = ${JSON.stringify(value)?.slice(0, 60)}`;
            const key =
              result.status === 200 ? String(outcome(result)) : `${result.status} ${code(result) ?? ''}`.trim();
            stats.set(key, (stats.get(key) ?? 0) + 1);
            if (result.status === 401 && code(result) === 'pos_mismatch' && path.includes('merchantPosId')) return;
            if (result.status !== 200 || !RECORDED.includes(outcome(result) ?? ''))
              throw new Error(`${label}: ${describeResult(result)}`);
          }),
          { numRuns: FUZZ_RUNS, includeErrorInReport: true },
        );
        h.figure('mutated bodies', [...stats].map(([k, v]) => `${k} x${v}`).join(', '));
      },
      90_000,
    );

    h.check(
      '10 MB bodies are refused with 413 without being buffered: declared (answered before a byte of body) and chunked (cut at the 64 KB limit)',
      async () => {
        const problems: string[] = [];
        const before = await rows.total();
        const signature = `sender=checkout;signature=${'6789abcd'.repeat(4)};algorithm=MD5`;
        const declared = await rawRequest(
          main.publicPort,
          `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\nAuthorization: ${BASIC_HEADER}\r\nOpenSvc-Signature: ${signature}\r\n\r\n`,
          { timeoutMs: 5_000 },
        );
        note('10 MB declared', declared.status);
        if (declared.status !== 413)
          problems.push(
            `declared 10 MB: expected 413 before the body, got ${declared.status ?? 'no answer'} ${declared.response.slice(0, 80)}`,
          );

        // Chunked, 64 KB every 10 ms, stopping at the first byte of an answer (written at full speed, the
        // client would still be writing when the server closes, and the close would reset the connection
        // before the answer is read).
        const piece = `${(64 * 1024).toString(16)}\r\n${' '.repeat(64 * 1024)}\r\n`;
        const chunkedStream = `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nAuthorization: ${BASIC_HEADER}\r\nOpenSvc-Signature: ${signature}\r\n\r\n${piece.repeat(160)}0\r\n\r\n`;
        const raw = await rawRequest(main.publicPort, chunkedStream, { chunkBytes: piece.length, timeoutMs: 10_000 });
        const chunked = { status: raw.status ?? 0, writtenAtAnswer: raw.bytesWritten, ms: raw.closedAfterMs ?? 0 };
        note('10 MB chunked', chunked.status);
        h.figure(
          'chunked 10 MB: answered',
          `${chunked.status} with ${Math.round(chunked.writtenAtAnswer / 1024)} KB sent (the limit is 64 KB)`,
        );
        h.figure(
          'declared 10 MB: answered after',
          declared.closedAfterMs === null ? 'connection left open' : seconds(declared.closedAfterMs),
        );
        if (chunked.status !== 413) problems.push(`chunked 10 MB: expected 413, got ${chunked.status}`);
        if (chunked.writtenAtAnswer >= 1024 * 1024)
          problems.push(`chunked 10 MB: answered only after ${chunked.writtenAtAnswer} bytes`);
        if ((await rows.total()) !== before) problems.push('a 10 MB body wrote rows');
        expect(problems).toEqual([]);
        main.assertAlive();
      },
    );

    h.check(
      "1,000 headers: accepted after the notification's own headers; refused (4xx, nothing stored) before them; 431 beyond 16 KB",
      async () => {
        const problems: string[] = [];
        const body = Buffer.from(validOrder());
        const own = { Host: `127.0.0.1:${main.publicPort}`, ...notificationHeaders(body, { basicAuth: true }) };
        const filler: Record<string, string> = {};
        for (let i = 0; i < 1000; i += 1) filler[`x-h${i}`] = String(i % 10);
        // Node keeps the first 1,000 header lines of a request (maxHeadersCount) and drops the rest.
        const after = await send({ port: main.publicPort, body, headers: { ...own, ...filler }, timeoutMs: 10_000 });
        note('1000 headers after', after.status);
        if (after.status !== 200 || outcome(after) !== 'accepted')
          problems.push(
            `1,000 headers after the notification's own: expected 200 accepted, got ${describeResult(after)}`,
          );
        const before = await refused(problems, "1,000 headers before the notification's own", 400, null, () =>
          send({ port: main.publicPort, body, headers: { ...filler, ...own }, timeoutMs: 10_000 }),
        );
        note('1000 headers before', before.status);
        h.figure(
          '1,000 headers before Host and the signature',
          `${before.status} (the headers past the 1,000th are dropped by Node)`,
        );
        let big = `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
        for (let i = 0; i < 1000; i += 1) big += `x-filler-header-${i}: ${'v'.repeat(16)}\r\n`;
        const rowsBefore = await rows.total();
        const tooBig = await rawRequest(
          main.publicPort,
          `${big}Content-Length: ${body.length}\r\n\r\n${body.toString()}`,
          { chunkBytes: 4096, timeoutMs: 5_000 },
        );
        note('1000 big headers', tooBig.status);
        if (tooBig.status !== 431)
          problems.push(`1,000 headers of 36 bytes: expected 431, got ${tooBig.status ?? 'no answer'}`);
        if ((await rows.total()) !== rowsBefore) problems.push('1,000 headers of 36 bytes: rows were written');
        expect(problems).toEqual([]);
      },
    );

    h.check(
      'malformed HTTP on a raw socket gets a 4xx or a closed connection, never a 5xx, and stores nothing',
      async () => {
        const problems: string[] = [];
        const body = validOrder();
        const signature = notificationHeaders(Buffer.from(body))['OpenSvc-Signature'] as string;
        const head = (extra: string): string =>
          `POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: ${BASIC_HEADER}\r\nOpenSvc-Signature: ${signature}\r\n${extra}\r\n`;
        const cases: Array<[string, string | Buffer, boolean]> = [
          ['garbage request line', 'GARBAGE\r\n\r\n', false],
          [
            'control character in a header',
            head(`Content-Length: ${Buffer.byteLength(body)}\r\nX-Bad: a\u0001b\r\n`) + body,
            false,
          ],
          [
            'Content-Length and Transfer-Encoding',
            head(`Content-Length: ${Buffer.byteLength(body)}\r\nTransfer-Encoding: chunked\r\n`) + `0\r\n\r\n`,
            false,
          ],
          ['negative Content-Length', head('Content-Length: -1\r\n') + body, false],
          ['non-numeric Content-Length', head('Content-Length: abc\r\n') + body, false],
          [
            'two different Content-Lengths',
            head(`Content-Length: ${Buffer.byteLength(body)}\r\nContent-Length: 3\r\n`) + body,
            false,
          ],
          [
            'body shorter than declared, then closed',
            head(`Content-Length: ${Buffer.byteLength(body) + 100}\r\n`) + body,
            true,
          ],
          ['broken chunked encoding', head('Transfer-Encoding: chunked\r\n') + `zz\r\n${body}\r\n0\r\n\r\n`, false],
          [
            'HTTP/1.0 without Host',
            `POST /notifications HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
            false,
          ],
          ['header without colon', head(`Content-Length: ${Buffer.byteLength(body)}\r\nNoColonHere\r\n`) + body, false],
          [
            'bare LF line endings',
            head(`Content-Length: ${Buffer.byteLength(body)}\r\n`).replace(/\r\n/g, '\n') + body,
            false,
          ],
          ['NUL in the path', `POST /notifi\u0000cations HTTP/1.1\r\nHost: x\r\n\r\n`, false],
        ];
        for (const [label, bytes, halfClose] of cases) {
          const before = await rows.total();
          const result = await rawRequest(main.publicPort, bytes, { halfClose, timeoutMs: 3_000 });
          const after = await rows.total();
          note(`raw: ${label}`, result.status);
          if (result.status !== null && (result.status < 400 || result.status >= 500))
            problems.push(`${label}: answered ${result.status}`);
          if (after !== before) problems.push(`${label}: ${after - before} rows written`);
        }
        h.figure('malformed HTTP cases', cases.length);
        expect(problems).toEqual([]);
        main.assertAlive();
      },
    );

    h.check(
      `clients sending one byte a second are cut off: headers within ${HEADERS_TIMEOUT_MS / 1000} s, the whole request within ${REQUEST_TIMEOUT_MS / 1000} s (+${SLOW_MARGIN_MS / 1000} s margin)`,
      async () => {
        const [headers, body] = await Promise.all([slowHeaders, slowBody]);
        note('slow headers', headers.status);
        note('slow body', body.status);
        const text = (r: RawResult): string =>
          r.closedAfterMs === null
            ? `still open after ${SLOW_GIVE_UP_MS / 1000} s`
            : `closed after ${seconds(r.closedAfterMs)}${r.status ? ` (${r.status})` : ''}`;
        h.figure('slow headers', text(headers));
        h.figure('slow body', text(body));
        const late = (r: RawResult, bound: number): string | null =>
          r.closedAfterMs !== null && r.closedAfterMs <= bound ? null : text(r);
        expect({
          'slow headers': late(headers, HEADERS_TIMEOUT_MS + SLOW_MARGIN_MS),
          'slow body': late(body, REQUEST_TIMEOUT_MS + SLOW_MARGIN_MS),
        }).toEqual({
          'slow headers': null,
          'slow body': null,
        });
      },
      SLOW_GIVE_UP_MS + 5_000,
    );

    h.check(
      'afterwards the service still answers /livez and accepts a valid notification; no request was ever answered 5xx; no crash',
      async () => {
        const livez = await getJson<{ status: string }>(main.adminPort, '/livez');
        expect(livez.status).toBe(200);
        const orderId = uniqueId('AFTER');
        const result = await post(
          'after',
          orderBody({ orderId, status: 'COMPLETED', paymentId: '9', payMethodType: 'PBL', buyer: BUYER }),
        );
        expect([result.status, outcome(result)]).toEqual([200, 'accepted']);
        expect((await getJson<{ status: string }>(main.adminPort, `/orders/${orderId}`)).body.status).toBe('COMPLETED');
        const fiveHundreds = answers.filter((a) => a.status !== null && a.status >= 500);
        const metrics = await main.metricsText();
        const counted = [
          ...metrics.matchAll(/^http_request_duration_seconds_count\{[^}]*status_code="(5\d\d)"[^}]*\} (\d+)/gm),
        ].map((m) => `${m[1]} x${m[2]}`);
        h.figure('requests', answers.length);
        h.figure('200s', answers.filter((a) => a.status === 200).length);
        h.figure('5xx', fiveHundreds.length);
        h.figure('max latency', `${seconds(maxLatencyMs)} (slow clients apart)`);
        h.figure('rows', `${await rows.total()} (notifications + quarantined + deliveries)`);
        expect(main.running && prod.running).toBe(true);
        expect(fiveHundreds.map((a) => `${a.label}: ${a.status}`)).toEqual([]);
        expect(counted).toEqual([]);
        expect(services.flatMap((s) => s.jsonLogs()).filter((l) => l.level === 60 || 'raw' in l)).toEqual([]);
      },
    );

    h.check('both services stop cleanly (SIGTERM, exit code 0)', async () => {
      expect(await main.stop()).toMatchObject({ code: 0, signal: null });
      expect(await prod.stop()).toMatchObject({ code: 0, signal: null });
    });

    h.secretsCheck(() => services);
  });
}
