import fc from 'fast-check';
import { ConfigError, loadConfig, type Config } from '../../src/config';
import { readAlgorithm } from '../../src/verification/signatureHeader';

/**
 * Issue 32: a list-valued setting is read exactly as written, or refused naming the setting and the
 * entry; never read as some other value (a typo'd algorithm taken as part of a key, a ';' joining two
 * keys into one).
 */

interface ListSetting {
  name: string;
  /** Valid entries and what the configuration must read from them. */
  entries: fc.Arbitrary<Array<{ text: string; read: unknown }>>;
  /** What the configuration read, in the form of `read`. */
  readOf(config: Config): unknown[];
  /** A variable the setting needs beside it. */
  env?: Record<string, string>;
  /** Makes an entry unreadable in this setting's own way. */
  spoil: fc.Arbitrary<(entry: string) => string>;
  /** An entry that repeats one given earlier where that is refused (the same key, the same POS). */
  repeat?: (entry: string) => string;
}

const posId = fc.stringMatching(/^[1-9]\d{0,7}$/);
// What real keys and secrets are made of: hex, base64, the odd symbol; never ',', ':', ';', a space or a quote.
const secret = fc.stringMatching(/^[\w+/=.~!@#$%^&*()-]{1,40}$/);
const algorithm = fc.constantFrom('MD5', 'sha-1', 'SHA256', 'SHA-384', 'sha512');
const notAnAlgorithm = fc.stringMatching(/^[A-Za-z0-9-]{1,10}$/).filter((word) => readAlgorithm(word) === null);
const maskOf = (bits: number): number => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);
const dotted = (n: number): string => [24, 16, 8, 0].map((shift) => (n >>> shift) & 0xff).join('.');
/** An address, or a network written with its host bits clear (10.0.0.0/8; 10.0.0.5/8 is refused). */
const addressOrCidr = fc
  .tuple(fc.nat({ max: 0xffffffff }), fc.option(fc.integer({ min: 0, max: 32 }), { nil: undefined }))
  .map(([n, bits]): [string, number | undefined] => {
    if (bits === undefined) return [dotted(n), undefined];
    return [dotted((n & maskOf(bits)) >>> 0), bits];
  });
/** An allowlist keeps its entries as written; the proxies are ranges (an address is a /32). */
const allowed = addressOrCidr.map(([address, bits]) => {
  const text = bits === undefined ? address : `${address}/${bits}`;
  return { text, read: text };
});
const proxy = addressOrCidr.map(([address, bits]) => ({
  text: bits === undefined ? address : `${address}/${bits}`,
  read: `${address}/${bits ?? 32}`,
}));
/** Trailing garbage that makes an address or CIDR unreadable. */
const addressTypo = fc.constantFrom('x', '.', '/', '/33', '.1', ':99999', '%');

const SETTINGS: ListSetting[] = [
  {
    name: 'SECOND_KEYS',
    entries: fc
      .uniqueArray(fc.tuple(posId, secret, fc.option(algorithm, { nil: undefined })), {
        minLength: 1,
        maxLength: 5,
        selector: ([pos, key]) => `${pos}:${key}`,
      })
      .map((keys) =>
        keys.map(([pos, key, alg]) => ({
          text: alg === undefined ? `${pos}:${key}` : `${pos}:${key}:${alg}`,
          read: { posId: pos, key, minAlgorithm: alg === undefined ? null : readAlgorithm(alg) },
        })),
      ),
    readOf: (config) =>
      config.secondKeys.map((k) => ({ posId: k.posId, key: k.key.toString('utf8'), minAlgorithm: k.minAlgorithm })),
    spoil: notAnAlgorithm.map((word) => (entry: string) => `${entry.split(':').slice(0, 2).join(':')}:${word}`),
    repeat: (entry) => entry,
  },
  {
    name: 'PAYMENT_API_CREDENTIALS',
    env: { PAYMENT_API_URL: 'https://secure.example.com' },
    entries: fc
      .uniqueArray(fc.tuple(posId, secret, fc.array(secret, { minLength: 1, maxLength: 2 })), {
        minLength: 1,
        maxLength: 5,
        selector: ([pos]) => pos,
      })
      // The secret may hold ':'.
      .map((clients) =>
        clients.map(([pos, clientId, parts]) => ({
          text: `${pos}:${clientId}:${parts.join(':')}`,
          read: { posId: pos, clientId, clientSecret: parts.join(':') },
        })),
      ),
    readOf: (config) => config.reconciliation?.credentials ?? [],
    spoil: fc.constant((entry: string) => entry.split(':').slice(0, 2).join(':')),
    repeat: (entry) => `${entry.split(':')[0] ?? ''}:another-client:another-secret`,
  },
  {
    name: 'ALLOWED_SOURCE_IPS',
    entries: fc.array(allowed, { minLength: 1, maxLength: 5 }),
    readOf: (config) => [...config.sourceAllowlist.entries],
    spoil: addressTypo.map((typo) => (entry: string) => `${entry.split('/')[0] ?? ''}${typo}`),
  },
  {
    name: 'TRUST_PROXY',
    entries: fc.array(proxy, { minLength: 1, maxLength: 5 }),
    readOf: (config) =>
      config.trustProxy.kind === 'proxies'
        ? config.trustProxy.ranges.map(([address, bits]) => `${address.toString()}/${bits}`)
        : [config.trustProxy.kind],
    spoil: addressTypo.map((typo) => (entry: string) => `${entry.split('/')[0] ?? ''}${typo}`),
  },
];

/** A valid value as an operator might space it. */
const joined = (texts: readonly string[], spaces: readonly boolean[]): string =>
  texts.map((text, i) => (spaces[i] ? ` ${text} ` : text)).join(',');

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe.each(SETTINGS)('$name', (setting) => {
  it('When the value is well formed (spaces around entries or not), then the configuration reads exactly its entries', () => {
    fc.assert(
      fc.property(setting.entries, fc.array(fc.boolean(), { maxLength: 5 }), (entries, spaces) => {
        const config = loadConfig({
          SECOND_KEYS: '1:k0123456789abcdef',
          ...setting.env,
          [setting.name]: joined(
            entries.map((e) => e.text),
            spaces,
          ),
        });
        expect(setting.readOf(config)).toEqual(entries.map((e) => e.read));
      }),
    );
  });

  it('When an entry is unreadable, empty, joined to the next by ";" or a space, or repeated, then the start is refused naming the setting and that entry', () => {
    const { repeat } = setting;
    const ways = ['typo', 'empty', ';', ' ', ...(repeat ? ['repeat'] : [])];
    const spoiled = fc
      .tuple(setting.entries, fc.nat(), setting.spoil, fc.constantFrom(...ways))
      .map(([entries, at, spoil, how]) => {
        const texts = entries.map((e) => e.text);
        const i = at % texts.length;
        switch (how) {
          case 'typo':
            texts[i] = spoil(texts[i] ?? '');
            return { value: texts.join(','), entry: i + 1 };
          case 'empty': {
            // Anywhere: first, between two, last.
            const where = at % (texts.length + 1);
            texts.splice(where, 0, '');
            return { value: texts.join(','), entry: where + 1 };
          }
          case 'repeat':
            return { value: [...texts, repeat?.(texts[i] ?? '') ?? ''].join(','), entry: texts.length + 1 };
          default: {
            // Entries i and i + 1 joined by a separator that is not ',' (or one entry with it inside).
            const [first = '', second = first] = texts.splice(i, 2);
            texts.splice(i, 0, `${first}${how}${second}`);
            return { value: texts.join(','), entry: i + 1 };
          }
        }
      });
    fc.assert(
      fc.property(spoiled, ({ value, entry }) => {
        const problems = problemsOf({ ...setting.env, [setting.name]: value });
        expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^${setting.name}: entry ${entry}\\b`)));
      }),
    );
  });
});

describe('a CIDR with host bits set (issue 37)', () => {
  it.each(['ALLOWED_SOURCE_IPS', 'TRUST_PROXY'])(
    'When an entry of %s sets host bits, then the start is refused naming that entry and the network it would mean',
    (name) => {
      const values = fc.tuple(
        fc.array(addressOrCidr, { maxLength: 4 }),
        fc.nat(),
        fc.nat({ max: 0xffffffff }),
        fc.integer({ min: 0, max: 31 }),
      );
      fc.assert(
        fc.property(values, ([others, at, n, bits]) => {
          const texts = others.map(([address, b]) => (b === undefined ? address : `${address}/${b}`));
          const network = (n & maskOf(bits)) >>> 0;
          // The lowest bit lies outside any prefix shorter than 32.
          const entry = `${dotted((network | 1) >>> 0)}/${bits}`;
          const where = at % (texts.length + 1);
          texts.splice(where, 0, entry);
          expect(problemsOf({ [name]: texts.join(',') })).toContainEqual(
            `${name}: entry ${where + 1} ("${entry}") has host bits set: write ${dotted(network)}/${bits} for the ` +
              `network, or ${dotted((network | 1) >>> 0)} alone for the one address`,
          );
        }),
      );
    },
  );
});
