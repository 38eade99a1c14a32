import { resolveSource } from '../../../src/intake/sourceAddress';
import { reportStartFailure } from '../../../src/cli/startFailure';
import {
  brokerUrl,
  ConfigError,
  configurationWarnings,
  consoleTokens,
  loadConfig,
  parseDuration,
  type Config,
} from '../../../src/config';
import { createLogger } from '../../../src/observability/logger';
import fc from 'fast-check';
import { readAlgorithm } from '../../../src/verification/signatureHeader';

const PRODUCTION = {
  NODE_ENV: 'production',
  SECOND_KEYS: '1:k0123456789abcdef',
  DATABASE_URL: 'postgres://u@db:5432/n',
};
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('loadConfig', () => {
  it('When only SECOND_KEYS, DATABASE_URL and AMQP_URL are set in production, then every other setting has its documented default', () => {
    const config = loadConfig({ ...PRODUCTION, AMQP_URL: 'amqps://app:pw@mq:5671/v' });
    expect(config).toMatchObject({
      port: 8080,
      adminPort: 9090,
      production: true,
      localDefaults: [],
      databaseUrl: 'postgres://u@db:5432/n',
      dataDir: '.data',
      migrateOnStart: true,
      databasePipeline: true,
      databaseWriteLanes: 1,
      recorderKnownNotifications: 50_000,
      recorderKeptOrders: 20_000,
      trustProxy: { kind: 'none' },
      notifyBasicAuth: null,
      bodyLimitBytes: 64 * 1024,
      unverifiedBodiesLimitBytes: 32 * 1024 * 1024,
      adminToken: null,
      adminConcurrency: 4,
      logLevel: 'info',
      relayEnabled: true,
      amqpUrl: 'amqps://app:pw@mq:5671/v',
      amqpExchange: 'payment.events',
      outboxRetentionMs: 7 * 86_400_000,
    });
    const from = (address: string) => resolveSource(address, undefined, config.trustProxy, config.sourceAllowlist);
    expect(from('185.68.12.10')).toMatchObject({ ok: true, allowed: true });
    expect(from('127.0.0.1')).toMatchObject({ ok: true, allowed: false });
  });

  it('When several values are wrong, then every problem is named at once, and no secret is echoed', () => {
    const problems = problemsOf({
      SECOND_KEYS: 'topsecret',
      PORT: 'eighty',
      ALLOWED_SOURCE_IPS: 'nowhere',
      BODY_LIMIT: 'huge',
      NOTIFY_BASIC_AUTH: 'nopassword',
      MIGRATE_ON_START: 'maybe',
      LOG_LEVEL: 'loud',
      TRUST_PROXY: 'not a cidr',
      OUTBOX_RETENTION: 'forever',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(
      [
        'ALLOWED_SOURCE_IPS',
        'BODY_LIMIT',
        'LOG_LEVEL',
        'MIGRATE_ON_START',
        'NOTIFY_BASIC_AUTH',
        'OUTBOX_RETENTION',
        'PORT',
        'SECOND_KEYS',
        'TRUST_PROXY',
      ].sort(),
    );
    expect(problems.join('\n')).not.toMatch(/topsecret|nopassword/);
  });

  it('When DATABASE_WRITE_LANES is set, then it is read as a count from 1 to 16', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_WRITE_LANES: '2' }).databaseWriteLanes).toBe(2);
    for (const bad of ['0', '17', 'two', '1.5']) {
      expect(
        problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_WRITE_LANES: bad }).map((p) => p.split(':')[0]),
      ).toEqual(['DATABASE_WRITE_LANES']);
    }
  });

  it('When RECORDER_KEPT_ORDERS is set, then it is read as a count from 0 (off) to 100,000, naming it otherwise', () => {
    const keys = { SECOND_KEYS: '1:k0123456789abcdef' };
    expect(loadConfig({ ...keys, RECORDER_KEPT_ORDERS: '0' }).recorderKeptOrders).toBe(0);
    expect(loadConfig({ ...keys, RECORDER_KEPT_ORDERS: '100000' }).recorderKeptOrders).toBe(100_000);
    for (const bad of ['-1', '100001', 'many', '1.5']) {
      expect(problemsOf({ ...keys, RECORDER_KEPT_ORDERS: bad }).map((p) => p.split(':')[0])).toEqual([
        'RECORDER_KEPT_ORDERS',
      ]);
    }
  });

  it('When RECORDER_KNOWN_NOTIFICATIONS is set, then it is read as a count from 0 (off) to 200,000, naming it otherwise', () => {
    const keys = { SECOND_KEYS: '1:k0123456789abcdef' };
    expect(loadConfig({ ...keys, RECORDER_KNOWN_NOTIFICATIONS: '0' }).recorderKnownNotifications).toBe(0);
    expect(loadConfig({ ...keys, RECORDER_KNOWN_NOTIFICATIONS: '200000' }).recorderKnownNotifications).toBe(200_000);
    for (const bad of ['-1', '200001', 'many', '1.5']) {
      expect(problemsOf({ ...keys, RECORDER_KNOWN_NOTIFICATIONS: bad }).map((p) => p.split(':')[0])).toEqual([
        'RECORDER_KNOWN_NOTIFICATIONS',
      ]);
    }
  });

  it('When DATABASE_PIPELINE is false, then the configuration turns pipelining off, and a value that is not a boolean is refused', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_PIPELINE: 'false' }).databasePipeline).toBe(false);
    expect(
      problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_PIPELINE: 'sometimes' }).map((p) => p.split(':')[0]),
    ).toEqual(['DATABASE_PIPELINE']);
  });

  it('When nothing is set outside production, then the local defaults apply: sandbox key, loopback, embedded database, local broker', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      production: false,
      databaseUrl: null,
      dataDir: '.data',
      amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
    });
    expect(config.localDefaults).toEqual(['HOST', 'SECOND_KEYS', 'ALLOWED_SOURCE_IPS', 'DATABASE_URL', 'AMQP_URL']);
    expect(config.host).toBe('127.0.0.1');
    expect(config.secondKeys.map((k) => k.posId)).toEqual(['300746']);
    const from = (address: string) => resolveSource(address, undefined, config.trustProxy, config.sourceAllowlist);
    expect(from('127.0.0.1')).toMatchObject({ ok: true, allowed: true });
    expect(from('::1')).toMatchObject({ ok: true, allowed: true });
    expect(from('185.68.12.10')).toMatchObject({ ok: true, allowed: false });
    expect(configurationWarnings(config)).toEqual([]);
  });

  it('When settings are given outside production, then they win and are not reported as local defaults', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      SECOND_KEYS: '1:k0123456789abcdef',
      ALLOWED_SOURCE_IPS: 'sandbox',
      DATABASE_URL: 'postgres://u@h/d',
      AMQP_URL: 'amqp://mq',
    });
    expect(config.localDefaults).toEqual([]);
    expect(config.databaseUrl).toBe('postgres://u@h/d');
  });

  it('When nothing is set in production, then the service refuses to start, naming each dependency and the keys: no local default is taken', () => {
    const required = ['SECOND_KEYS', 'DATABASE_URL', 'AMQP_URL'];
    const problems = problemsOf({ NODE_ENV: 'production' });
    expect(problems.map((p) => p.split(':')[0])).toEqual(required);
    for (const problem of problems) expect(problem).toMatch(/^[A-Z_]+: is required with NODE_ENV=production/);
    // Every local default is among them but the allowlist and HOST, which have production defaults of their own.
    expect(loadConfig({}).localDefaults.filter((name) => !['ALLOWED_SOURCE_IPS', 'HOST'].includes(name))).toEqual(
      required,
    );
    expect(problemsOf({ NODE_ENV: 'production', SECOND_KEYS: '1:k0123456789abcdef', AMQP_URL: 'amqp://mq' })).toEqual([
      expect.stringMatching(/^DATABASE_URL: is required/),
    ]);
  });

  it('When a process in production does not receive or publish, then it is not asked for the keys or the broker', () => {
    const names = (env: Record<string, string>, needs: { receiving?: boolean; publishing?: boolean }) => {
      try {
        loadConfig({ NODE_ENV: 'production', ...env }, needs);
        return [];
      } catch (error) {
        return (error as ConfigError).problems.map((p) => p.split(':')[0]);
      }
    };
    // Migrations; the relay alone; the service without its relay.
    expect(names({}, { receiving: false, publishing: false })).toEqual(['DATABASE_URL']);
    expect(names({}, { receiving: false, publishing: true })).toEqual(['DATABASE_URL', 'AMQP_URL']);
    expect(names({ RELAY_ENABLED: 'false' }, {})).toEqual(['SECOND_KEYS', 'DATABASE_URL']);
    const relayOff = loadConfig({ ...PRODUCTION, RELAY_ENABLED: 'false' });
    expect(relayOff).toMatchObject({ relayEnabled: false, amqpUrl: null });
    expect(() => brokerUrl(relayOff)).toThrow(/AMQP_URL: is required/);
  });

  it.each(['production', 'Production', 'PRODUCTION', ' production', 'production\n', '\tProduction '])(
    'When NODE_ENV is %j, then it is production: no local default is taken',
    (value) => {
      expect(problemsOf({ NODE_ENV: value }).map((p) => p.split(':')[0])).toEqual([
        'SECOND_KEYS',
        'DATABASE_URL',
        'AMQP_URL',
      ]);
      expect(loadConfig({ ...PRODUCTION, NODE_ENV: value, AMQP_URL: 'amqp://mq' }).production).toBe(true);
    },
  );

  it.each(['development', 'Test', ' DEVELOPMENT '])('When NODE_ENV is %j, then the local defaults apply', (value) => {
    expect(loadConfig({ NODE_ENV: value })).toMatchObject({ production: false, databaseUrl: null });
  });

  it.each(['prod', 'staging', 'productoin', 'production1', 'pro duction', 'dev'])(
    'When NODE_ENV is %j, then the start is refused naming NODE_ENV, and no local default is taken',
    (value) => {
      expect(problemsOf({ NODE_ENV: value })).toEqual(['NODE_ENV: must be production, development or test']);
      expect(problemsOf({ ...PRODUCTION, NODE_ENV: value })).toEqual([
        'NODE_ENV: must be production, development or test',
      ]);
    },
  );

  it('When NODE_ENV is production, then the allowlist keeps its production default', () => {
    const config = loadConfig({ ...PRODUCTION, AMQP_URL: 'amqp://mq' });
    expect(config.sourceAllowlist.entries).toEqual(['production']);
  });

  it('When TRUST_PROXY is a hop count or CIDRs, then the intake trusts those', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '1' }).trustProxy).toEqual({
      kind: 'hops',
      hops: 1,
    });
    expect(
      loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy,
    ).toMatchObject({
      kind: 'proxies',
      ranges: [expect.anything(), expect.anything()],
    });
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: 'none' }).trustProxy).toEqual({
      kind: 'none',
    });
  });

  it('When ADMIN_TOKEN is short, or a size is out of range, then each is a problem', () => {
    expect(
      problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', ADMIN_TOKEN: 'short', UNVERIFIED_BODIES_LIMIT: '1kb' }),
    ).toEqual([
      'UNVERIFIED_BODIES_LIMIT: must be a size from 64KB to 1GB, such as 32mb',
      'ADMIN_TOKEN: must be at least 16 characters',
    ]);
  });

  it("When the console's time zone, locale and confirmation time are set, then they are read; by default UTC, en-GB, none", () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef' })).toMatchObject({
      consoleTimeZone: 'UTC',
      consoleLocale: 'en-GB',
      consoleConfirmWithinMs: null,
    });
    expect(
      loadConfig({
        SECOND_KEYS: '1:k0123456789abcdef',
        CONSOLE_TIME_ZONE: 'europe/warsaw',
        CONSOLE_LOCALE: 'pl-pl',
        CONSOLE_CONFIRM_WITHIN: '5d',
      }),
    ).toMatchObject({
      consoleTimeZone: 'Europe/Warsaw',
      consoleLocale: 'pl-PL',
      consoleConfirmWithinMs: 5 * 86_400_000,
    });
  });

  it("When the console's time zone or locale does not exist, then the start is refused naming each setting", () => {
    expect(
      problemsOf({
        SECOND_KEYS: '1:k0123456789abcdef',
        CONSOLE_TIME_ZONE: 'Europe/Atlantis',
        CONSOLE_LOCALE: 'xx-YY',
        CONSOLE_CONFIRM_WITHIN: '10m',
      }),
    ).toEqual([
      'CONSOLE_TIME_ZONE: must be an IANA time zone name such as Europe/Warsaw or UTC',
      'CONSOLE_LOCALE: must be a locale such as en-GB or pl-PL',
      'CONSOLE_CONFIRM_WITHIN: must be at least 1h',
    ]);
  });

  it('When EXPECTED_UNROUTED_EVENT_TYPES lists event types, then each is taken once; unset, none', () => {
    expect(
      loadConfig({
        SECOND_KEYS: '1:k0123456789abcdef',
        EXPECTED_UNROUTED_EVENT_TYPES: ' order.pending, refund.pending,order.pending',
      }),
    ).toMatchObject({ expectedUnroutedEventTypes: ['order.pending', 'refund.pending'] });
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef' })).toMatchObject({ expectedUnroutedEventTypes: [] });
  });

  it('When EXPECTED_UNROUTED_EVENT_TYPES names an unknown type or a pattern, then the start stops naming it and listing the types', () => {
    expect(
      problemsOf({
        SECOND_KEYS: '1:k0123456789abcdef',
        EXPECTED_UNROUTED_EVENT_TYPES: 'order.pending,order.paid,refund.#',
      }),
    ).toEqual([
      'EXPECTED_UNROUTED_EVENT_TYPES: entry 2 ("order.paid") is not an event type; the types: order.pending, order.waiting_for_confirmation, order.completed, order.canceled, order.status_conflict, refund.pending, refund.finalized, refund.canceled, refund.status_conflict',
      'EXPECTED_UNROUTED_EVENT_TYPES: entry 3 ("refund.#") is not an event type; the types: order.pending, order.waiting_for_confirmation, order.completed, order.canceled, order.status_conflict, refund.pending, refund.finalized, refund.canceled, refund.status_conflict',
    ]);
  });

  it("When the payment service's time zone is unset, then Europe/Warsaw; when it does not exist, the start is refused", () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef' }).paymentServiceTimeZone).toBe('Europe/Warsaw');
    expect(
      loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', PAYMENT_SERVICE_TIME_ZONE: 'utc' }).paymentServiceTimeZone,
    ).toBe('UTC');
    expect(problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', PAYMENT_SERVICE_TIME_ZONE: 'Europe/Atlantis' })).toEqual([
      'PAYMENT_SERVICE_TIME_ZONE: must be an IANA time zone name such as Europe/Warsaw or UTC',
    ]);
  });

  it('When NOTIFY_BASIC_AUTH has a password with ":", then it splits on the first ":" only', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef', NOTIFY_BASIC_AUTH: 'shop:pa:ss' }).notifyBasicAuth).toEqual(
      {
        user: 'shop',
        password: 'pa:ss',
      },
    );
  });

  it('When PAYMENT_API_URL is unset, then reconciliation is off', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k0123456789abcdef' }).reconciliation).toBeNull();
  });

  it('When PAYMENT_API_URL and PAYMENT_API_CREDENTIALS are set, then reconciliation has its documented defaults', () => {
    const config = loadConfig({
      SECOND_KEYS: '1:k0123456789abcdef',
      PAYMENT_API_URL: 'https://secure.example.com/',
      PAYMENT_API_CREDENTIALS: '145227:client-a:se:cret, 300746:client-b:other',
    });
    expect(config.reconciliation).toEqual({
      paymentApiUrl: 'https://secure.example.com/',
      credentials: [
        { posId: '145227', clientId: 'client-a', clientSecret: 'se:cret' },
        { posId: '300746', clientId: 'client-b', clientSecret: 'other' },
      ],
      timeoutMs: 10_000,
      maxInFlight: 4,
      maxPerSecond: 10,
      afterMs: 5 * 60_000,
      giveUpMs: 7 * 86_400_000,
      intervalMs: 30_000,
    });
  });

  it('When the payment API and reconciler settings are given, then they are read', () => {
    const config = loadConfig({
      SECOND_KEYS: '1:k0123456789abcdef',
      PAYMENT_API_URL: 'http://127.0.0.1:4010',
      PAYMENT_API_CREDENTIALS: '1:c:s',
      PAYMENT_API_TIMEOUT: '2s',
      PAYMENT_API_MAX_IN_FLIGHT: '2',
      PAYMENT_API_MAX_PER_SECOND: '0.5',
      RECONCILE_AFTER: '1m',
      RECONCILE_GIVE_UP: '3d',
      RECONCILE_INTERVAL: '5s',
    });
    expect(config.reconciliation).toMatchObject({
      timeoutMs: 2000,
      maxInFlight: 2,
      maxPerSecond: 0.5,
      afterMs: 60_000,
      giveUpMs: 3 * 86_400_000,
      intervalMs: 5000,
    });
  });

  it('When the payment API settings are wrong, then each is a problem, and no client secret is echoed', () => {
    const problems = problemsOf({
      SECOND_KEYS: '1:k0123456789abcdef',
      PAYMENT_API_URL: 'ftp://example.com',
      PAYMENT_API_CREDENTIALS: '145227:only-a-client, 145227:c:topsecret1, 145227:c:topsecret2, :c:topsecret3',
      PAYMENT_API_TIMEOUT: 'long',
      PAYMENT_API_MAX_IN_FLIGHT: '0',
      PAYMENT_API_MAX_PER_SECOND: 'fast',
      RECONCILE_AFTER: 'later',
      RECONCILE_INTERVAL: '0s',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'PAYMENT_API_CREDENTIALS',
      'PAYMENT_API_CREDENTIALS',
      'PAYMENT_API_CREDENTIALS',
      'PAYMENT_API_MAX_IN_FLIGHT',
      'PAYMENT_API_MAX_PER_SECOND',
      'PAYMENT_API_TIMEOUT',
      'PAYMENT_API_URL',
      'RECONCILE_AFTER',
      'RECONCILE_INTERVAL',
    ]);
    expect(problems.join('\n')).not.toMatch(/topsecret|only-a-client/);
    expect(problems.join('\n')).toContain('POS 145227 appears more than once');
  });

  it('When PAYMENT_API_URL is set without credentials, or RECONCILE_GIVE_UP is not past RECONCILE_AFTER, then the service refuses to start', () => {
    expect(problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', PAYMENT_API_URL: 'https://secure.example.com' })).toEqual([
      expect.stringMatching(/^PAYMENT_API_CREDENTIALS: is required with PAYMENT_API_URL/),
    ]);
    expect(problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', RECONCILE_AFTER: '2h', RECONCILE_GIVE_UP: '1h' })).toEqual([
      'RECONCILE_GIVE_UP: must be longer than RECONCILE_AFTER',
    ]);
  });

  it.each(['http://secure.example.com', 'http://10.0.0.7:8080', 'HTTP://payments.internal'])(
    'When PAYMENT_API_URL is %s (in clear, to another host), then the service refuses to start (exit 78) unless PAYMENT_API_ALLOW_HTTP=true',
    (url) => {
      const env = {
        SECOND_KEYS: '1:k0123456789abcdef',
        PAYMENT_API_URL: url,
        PAYMENT_API_CREDENTIALS: '1:c:topsecret',
      };
      const problems = problemsOf(env);
      expect(problems).toEqual([
        expect.stringMatching(/^PAYMENT_API_URL: is http:\/\/ .* PAYMENT_API_ALLOW_HTTP=true/),
      ]);
      expect(problems.join()).not.toContain('topsecret');
      expect(reportStartFailure(new ConfigError(problems), createLogger('silent'))).toBe(78);
      expect(loadConfig({ ...env, PAYMENT_API_ALLOW_HTTP: 'true' }).reconciliation?.paymentApiUrl).toBe(url);
    },
  );

  it.each(['https://secure.example.com', 'http://127.0.0.1:8090', 'http://localhost:8090', 'http://[::1]:8090'])(
    'When PAYMENT_API_URL is %s (TLS, or this machine), then it is taken without PAYMENT_API_ALLOW_HTTP outside production',
    (url) => {
      expect(
        problemsOf({ SECOND_KEYS: '1:k0123456789abcdef', PAYMENT_API_URL: url, PAYMENT_API_CREDENTIALS: '1:c:s' }),
      ).toEqual([]);
    },
  );

  it('When production is given an http:// PAYMENT_API_URL, even of this machine, then only PAYMENT_API_ALLOW_HTTP=true lets it start', () => {
    const env = {
      ...PRODUCTION,
      AMQP_URL: 'amqp://u:p@mq:5672',
      PAYMENT_API_URL: 'http://127.0.0.1:8443',
      PAYMENT_API_CREDENTIALS: '1:c:s',
    };
    expect(problemsOf(env)).toEqual([
      expect.stringMatching(/^PAYMENT_API_URL: is http:\/\/ .* PAYMENT_API_ALLOW_HTTP=true/),
    ]);
    expect(problemsOf({ ...env, PAYMENT_API_ALLOW_HTTP: 'true' })).toEqual([]);
    expect(problemsOf({ ...env, PAYMENT_API_URL: 'https://secure.example.com' })).toEqual([]);
  });

  it.each([
    ['7d', 604_800_000],
    ['12h', 43_200_000],
    ['30s', 30_000],
    ['500ms', 500],
    ['90', 90_000],
    ['soon', null],
  ])('When a duration is %s, then it is %p ms', (value, ms) => {
    expect(parseDuration(value)).toBe(ms);
  });
});

describe('values that would be taken as something else (issue 37): refused, or warned about when legal', () => {
  const KEY = '1:k0123456789abcdef';
  const warningsOf = (env: Record<string, string>) => configurationWarnings(loadConfig({ SECOND_KEYS: KEY, ...env }));

  it.each([
    [
      'ALLOWED_SOURCE_IPS',
      '10.0.0.5/8',
      'entry 1 ("10.0.0.5/8") has host bits set: write 10.0.0.0/8 for the network, or 10.0.0.5 alone',
    ],
    [
      'ALLOWED_SOURCE_IPS',
      '185.68.12.10, 2001:db8::1/32',
      'entry 2 ("2001:db8::1/32") has host bits set: write 2001:db8::/32',
    ],
    ['TRUST_PROXY', '10.1.0.0/16,10.0.0.5/8', 'entry 2 ("10.0.0.5/8") has host bits set: write 10.0.0.0/8'],
    ['ALLOWED_SOURCE_IPS', 'production,any', 'entry 2 is any, which lets every address in: write it alone'],
  ])('When %s is %j, then the start is refused naming the entry', (name, value, problem) => {
    expect(problemsOf({ SECOND_KEYS: KEY, [name]: value })).toEqual([expect.stringContaining(`${name}: ${problem}`)]);
  });

  it('When a CIDR is a network, or any stands alone, then it is taken', () => {
    expect(problemsOf({ SECOND_KEYS: KEY, ALLOWED_SOURCE_IPS: '10.0.0.0/8,10.0.0.5/32,::ffff:10.0.0.0/104' })).toEqual(
      [],
    );
    expect(problemsOf({ SECOND_KEYS: KEY, ALLOWED_SOURCE_IPS: 'any' })).toEqual([]);
  });

  it('When an allowlist entry repeats one, or is inside another, then a warning names both; the list still starts', () => {
    expect(warningsOf({ ALLOWED_SOURCE_IPS: '10.0.0.1, 10.0.0.1' })).toEqual([
      'ALLOWED_SOURCE_IPS: entry 2 ("10.0.0.1") is already let in by entry 1 ("10.0.0.1"): remove it, or correct it if another address was meant',
    ]);
    expect(warningsOf({ ALLOWED_SOURCE_IPS: '10.1.2.3,10.0.0.0/8,production,185.68.12.10,sandbox' })).toEqual([
      expect.stringContaining('entry 1 ("10.1.2.3") is already let in by entry 2 ("10.0.0.0/8")'),
      expect.stringContaining('entry 4 ("185.68.12.10") is already let in by entry 3 ("production")'),
    ]);
    expect(warningsOf({ ALLOWED_SOURCE_IPS: '10.0.0.0/8,11.0.0.0/8,production,sandbox' })).toEqual([]);
  });

  it('When a second key is short or its POS id not a number, then a warning names the entry outside production, and production refuses it, never echoing either', () => {
    const doubtful = 'abc:tiny,145227:0123456789abcdef0123456789abcdef';
    const warnings = warningsOf({ SECOND_KEYS: doubtful });
    expect(warnings).toEqual([
      expect.stringMatching(/^SECOND_KEYS: entry 1: the POS id is not a number/),
      expect.stringMatching(/^SECOND_KEYS: entry 1: the key is shorter than 16 characters/),
    ]);
    const problems = problemsOf({ ...PRODUCTION, AMQP_URL: 'amqp://u:p@mq', SECOND_KEYS: doubtful });
    expect(problems).toEqual(warnings.map((w) => `${w}; refused with NODE_ENV=production`));
    expect([...warnings, ...problems].join('\n')).not.toMatch(/abc|tiny/);
  });

  it('When PAYMENT_API_CREDENTIALS names a POS that is not a number, then the same rule applies', () => {
    const env = { PAYMENT_API_URL: 'https://api.example.com', PAYMENT_API_CREDENTIALS: 'pos-a:client:secret-1' };
    expect(warningsOf({ ...env, ADMIN_TOKEN: 'a-token-of-sixteen-chars' })).toEqual([
      expect.stringMatching(/^PAYMENT_API_CREDENTIALS: entry 1: the POS id is not a number/),
    ]);
    expect(problemsOf({ ...PRODUCTION, AMQP_URL: 'amqp://u:p@mq', ...env })).toEqual([
      expect.stringMatching(
        /^PAYMENT_API_CREDENTIALS: entry 1: the POS id is not a number .*refused with NODE_ENV=production$/,
      ),
    ]);
  });

  it('When a PAYMENT_API_CREDENTIALS entry has an extra field, then it is read as a secret holding ":", with a warning that never shows it', () => {
    const config = loadConfig({
      SECOND_KEYS: KEY,
      PAYMENT_API_URL: 'https://api.example.com',
      PAYMENT_API_CREDENTIALS: '145227:client:topsecret:extra',
      ADMIN_TOKEN: 'a-token-of-sixteen-chars',
    });
    expect(config.reconciliation?.credentials[0]?.clientSecret).toBe('topsecret:extra');
    const warnings = configurationWarnings(config);
    expect(warnings).toEqual([
      expect.stringMatching(/^PAYMENT_API_CREDENTIALS: entry 1 has more than three ':'-separated fields/),
    ]);
    expect(warnings.join()).not.toMatch(/topsecret|extra/);
  });

  it('When reconciliation settings are given without PAYMENT_API_URL, then a warning says they take no effect, without their values', () => {
    const warnings = warningsOf({ PAYMENT_API_CREDENTIALS: '145227:client:topsecret', RECONCILE_AFTER: '1m' });
    expect(warnings).toEqual([
      'PAYMENT_API_CREDENTIALS, RECONCILE_AFTER are set but PAYMENT_API_URL is not: reconciliation is off and they take no effect; set PAYMENT_API_URL to turn it on',
    ]);
    expect(
      loadConfig({ ...PRODUCTION, AMQP_URL: 'amqp://u:p@mq', PAYMENT_API_CREDENTIALS: '1:c:s' }).reconciliation,
    ).toBeNull();
  });
});
describe('console settings', () => {
  const production = {
    NODE_ENV: 'production',
    SECOND_KEYS: '1:k0123456789abcdef',
    DATABASE_URL: 'postgres://u@db:5432/n',
    RELAY_ENABLED: 'false',
  };

  it('When one name is in both roles, or a console token is also ADMIN_TOKEN, then the start is refused', () => {
    expect(() =>
      loadConfig({
        ...production,
        CONSOLE_OPERATOR_TOKENS: 'olga:0123456789abcdef',
        CONSOLE_VIEWER_TOKENS: 'olga:fedcba9876543210',
      }),
    ).toThrow(/CONSOLE_VIEWER_TOKENS: entry 1 \(olga\): the name is also in CONSOLE_OPERATOR_TOKENS/);
    expect(() =>
      loadConfig({ ...production, ADMIN_TOKEN: '0123456789abcdef', CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef' }),
    ).toThrow(/CONSOLE_VIEWER_TOKENS: entry 1 \(vera\): the token is also ADMIN_TOKEN's/);
  });

  it.each([
    ['CONSOLE_OPERATOR_TOKENS', 'otto:0123456789abcdef,admin:fedcba9876543210', 'entry 2 (admin)'],
    ['CONSOLE_VIEWER_TOKENS', 'local:fedcba9876543210', 'entry 1 (local)'],
  ])('When %s names a person admin or local, then the start is refused naming the setting', (setting, value, entry) => {
    const message = problemsOf({ ...production, ADMIN_TOKEN: 'admin-token-0123456789', [setting]: value }).join('\n');
    expect(message).toContain(`${setting}: ${entry}: the name is reserved`);
    expect(message).not.toContain('fedcba9876543210');
  });

  it('When EVENT_TEAM_TOKENS is read, then each entry is a name, a token and a queue prefix', () => {
    const config = loadConfig({
      ...production,
      EVENT_TEAM_TOKENS: 'billing:billing-token-0123456:billing.,ledger:with:colon:token-0123:ledger-',
    });
    expect(config.eventTeamTokens).toEqual([
      { name: 'billing', token: 'billing-token-0123456', queuePrefix: 'billing.' },
      { name: 'ledger', token: 'with:colon:token-0123', queuePrefix: 'ledger-' },
    ]);
  });

  it.each([
    ['a bad name', 'bad/name:billing-token-0123456:billing.', 'entry 1: must be name:token:queue-prefix'],
    ['no prefix', 'billing:billing-token-0123456', 'entry 1 (billing): must be name:token:queue-prefix'],
    ['a short token', 'billing:short:billing.', 'entry 1 (billing): the token must be at least 16 characters'],
    ['an empty prefix', 'billing:billing-token-0123456:', 'entry 1 (billing): the queue prefix must be'],
    ['an amq. prefix', 'billing:billing-token-0123456:amq.gen', 'entry 1 (billing): the queue prefix must be'],
    ['a prefix with a space', 'billing:billing-token-0123456:a/b', 'entry 1 (billing): the queue prefix must be'],
    ['a reserved name', 'admin:billing-token-0123456:billing.', 'entry 1 (admin): the name is reserved'],
    [
      'a name used twice',
      'billing:billing-token-0123456:billing.,billing:other-token-01234567:other.',
      'entry 2 (billing): the name is used twice',
    ],
    [
      'prefixes that overlap',
      'billing:billing-token-0123456:billing.,ledger:ledger-token-01234567:billing.ledger.',
      "entry 2 (ledger): its queue prefix and billing's overlap",
    ],
  ])(
    'When EVENT_TEAM_TOKENS holds %s, then the start is refused naming the entry, never a token',
    (_what, value, problem) => {
      const message = problemsOf({ ...production, EVENT_TEAM_TOKENS: value }).join('\n');
      expect(message).toContain(`EVENT_TEAM_TOKENS: ${problem}`);
      for (const secret of ['billing-token-0123456', 'other-token-01234567', 'ledger-token-01234567'])
        expect(message).not.toContain(secret);
    },
  );

  it.each([
    [
      'ADMIN_TOKEN and a team',
      { ADMIN_TOKEN: 'shared-token-0123456', EVENT_TEAM_TOKENS: 'billing:shared-token-0123456:b.' },
      "EVENT_TEAM_TOKENS: entry 1 (billing): the token is also ADMIN_TOKEN's",
    ],
    [
      'a person and a team',
      { CONSOLE_OPERATOR_TOKENS: 'olga:shared-token-0123456', EVENT_TEAM_TOKENS: 'billing:shared-token-0123456:b.' },
      "EVENT_TEAM_TOKENS: entry 1 (billing): the token is also CONSOLE_OPERATOR_TOKENS: entry 1 (olga)'s",
    ],
    [
      'two teams',
      { EVENT_TEAM_TOKENS: 'billing:shared-token-0123456:b.,ledger:shared-token-0123456:l.' },
      "EVENT_TEAM_TOKENS: entry 2 (ledger): the token is also EVENT_TEAM_TOKENS: entry 1 (billing)'s",
    ],
    [
      'an operator and a viewer',
      { CONSOLE_OPERATOR_TOKENS: 'otto:shared-token-0123456', CONSOLE_VIEWER_TOKENS: 'vera:shared-token-0123456' },
      "CONSOLE_VIEWER_TOKENS: entry 1 (vera): the token is also CONSOLE_OPERATOR_TOKENS: entry 1 (otto)'s",
    ],
    [
      'a team named as a person',
      { CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef', EVENT_TEAM_TOKENS: 'vera:billing-token-0123456:b.' },
      "EVENT_TEAM_TOKENS: entry 1 (vera): the name is also a console person's",
    ],
  ])(
    'When %s hold one token or one name, then the start is refused naming both, never the token',
    (_what, env, problem) => {
      const message = problemsOf({ ...production, ...env }).join('\n');
      expect(message).toContain(problem);
      expect(message).not.toContain('shared-token');
    },
  );

  it('When HOST is not set outside production, then it is loopback (a local default); in production every address', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({}).localDefaults).toContain('HOST');
    expect(loadConfig(production).host).toBe('0.0.0.0');
  });

  it('When ADMIN_TOKEN is set, then it signs in to the console as the operator admin', () => {
    const config = loadConfig({ ...production, ADMIN_TOKEN: 'admin-token-0123456789' });
    expect(consoleTokens(config)).toEqual([{ name: 'admin', token: 'admin-token-0123456789', role: 'operator' }]);
    expect(config.auditRetentionMs).toBe(365 * 86_400_000);
    expect(config.consoleViewersSeePersonalData).toBe(false);
  });
});

// The list settings (SECOND_KEYS, PAYMENT_API_CREDENTIALS, ALLOWED_SOURCE_IPS, TRUST_PROXY), read as loadConfig reads them.

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

function listProblemsOf(env: Record<string, string>): string[] {
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
        const problems = listProblemsOf({ ...setting.env, [setting.name]: value });
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
          expect(listProblemsOf({ [name]: texts.join(',') })).toContainEqual(
            `${name}: entry ${where + 1} ("${entry}") has host bits set: write ${dotted(network)}/${bits} for the ` +
              `network, or ${dotted((network | 1) >>> 0)} alone for the one address`,
          );
        }),
      );
    },
  );
});
