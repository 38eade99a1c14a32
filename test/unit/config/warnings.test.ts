import { configurationWarnings, keptStateWarning, loadConfig } from '../../../src/config';

describe('configurationWarnings', () => {
  const warningsOf = (env: Record<string, string>) => configurationWarnings(loadConfig(env));

  it('When the public sandbox key is configured with the production allowlist, then a warning says so, without the key', () => {
    const warnings = warningsOf({
      SECOND_KEYS: '300746:b6ca15b0d1020e8094d9b5f8d163db54,1:k0123456789abcdef',
      ALLOWED_SOURCE_IPS: 'production',
    });
    expect(warnings).toEqual([expect.stringMatching(/public sandbox key of POS 300746 .* anyone can sign with it/)]);
    expect(warnings.join()).not.toContain('b6ca15b0');
    expect(
      warningsOf({ SECOND_KEYS: '300746:b6ca15b0d1020e8094d9b5f8d163db54', ALLOWED_SOURCE_IPS: 'sandbox' }),
    ).toEqual([]);
  });

  it('When DATABASE_WRITE_LANES is more than DATABASE_POOL_MAX - 1, then a warning says how many lanes run', () => {
    expect(
      warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_WRITE_LANES: '4', DATABASE_POOL_MAX: '3' }),
    ).toEqual([
      'DATABASE_WRITE_LANES=4 is more than DATABASE_POOL_MAX - 1 allows: 2 lane(s) run; raise DATABASE_POOL_MAX or lower DATABASE_WRITE_LANES',
    ]);
    expect(
      warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_WRITE_LANES: '2', DATABASE_POOL_MAX: '3' }),
    ).toEqual([]);
    expect(
      warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', DATABASE_WRITE_LANES: '1', DATABASE_POOL_MAX: '1' }),
    ).toEqual([]);
  });

  it('When ADMIN_TOKEN is unset and the admin port beyond loopback, then a warning says its data routes answer 401, reconciliation on or not', () => {
    const reconciling = {
      SECOND_KEYS: '1:k0123456789abcdef',
      PAYMENT_API_URL: 'https://api.example.com',
      PAYMENT_API_CREDENTIALS: '1:c:s',
      CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef',
    };
    const [warning] = warningsOf({ ...reconciling, HOST: '0.0.0.0' });
    expect(warning).toMatch(/^ADMIN_TOKEN is not set and HOST=0\.0\.0\.0 is not loopback: .* answer 401/);
    expect(warningsOf({ ...reconciling, HOST: '10.1.2.3' })).toHaveLength(1);
    expect(warningsOf({ ...reconciling, HOST: '127.0.0.1' })).toEqual([]);
    expect(warningsOf({ ...reconciling, HOST: '::1' })).toEqual([]);
    expect(warningsOf({ ...reconciling, HOST: '0.0.0.0', ADMIN_TOKEN: 'a-token-of-sixteen-chars' })).toEqual([]);
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', HOST: '0.0.0.0' })).toEqual([
      expect.stringMatching(/^ADMIN_TOKEN is not set/),
      expect.stringMatching(/^no console token is set/),
    ]);
  });

  it('When CONSOLE_SESSION_SECRET is still set, then the start goes on and warns that it is no longer read', () => {
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', CONSOLE_SESSION_SECRET: 's'.repeat(32) })).toEqual([
      expect.stringMatching(
        /^CONSOLE_SESSION_SECRET is set but no longer read: console sessions are held in the database/,
      ),
    ]);
  });

  it('When TRUST_PROXY is a hop count, then a warning says any peer can choose its address; CIDRs do not warn', () => {
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '1' })).toEqual([
      expect.stringMatching(/TRUST_PROXY=1 believes X-Forwarded-For from whichever peer connects/),
    ]);
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '10.0.0.0/8' })).toEqual([]);
  });

  it('When production has no JOURNAL_AMQP_URL, then a warning says the journal shares the events vhost; not when it has one or none', () => {
    const production = {
      NODE_ENV: 'production',
      SECOND_KEYS: '1:k0123456789abcdef',
      DATABASE_URL: 'postgres://u@db:5432/n',
      AMQP_URL: 'amqp://u:p@mq:5672/events',
      ALLOWED_SOURCE_IPS: 'production',
      HOST: '127.0.0.1',
    };
    expect(warningsOf(production)).toEqual([
      expect.stringMatching(/^JOURNAL_AMQP_URL is not set: .* vhost of its own/),
    ]);
    expect(warningsOf({ ...production, JOURNAL_AMQP_URL: 'amqp://u:p@mq:5672/journal' })).toEqual([]);
    expect(warningsOf({ ...production, JOURNAL_RETENTION: 'off' })).toEqual([]);
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef' })).toEqual([]);
  });
});

describe('keptStateWarning', () => {
  const MB = 1_048_576;
  const settings = (known: string, kept: string) =>
    loadConfig({
      SECOND_KEYS: '300746:b6ca15b0d1020e8094d9b5f8d163db54',
      RECORDER_KNOWN_NOTIFICATIONS: known,
      RECORDER_KEPT_ORDERS: kept,
    });

  it('When the defaults run in a heap of 192 MB, then nothing is said (81 MB once full)', () => {
    expect(keptStateWarning(settings('50000', '20000'), 192 * MB, 0)).toBeNull();
  });

  it('When both kept states at their maximum would take more than half the heap, then it names both settings, what they take and the heap', () => {
    expect(keptStateWarning(settings('200000', '100000'), 192 * MB, 0)).toBe(
      'RECORDER_KNOWN_NOTIFICATIONS=200000 and RECORDER_KEPT_ORDERS=100000 keep up to 343 MB of heap once full ' +
        '(265 MB and 78 MB), more than half of the 192 MB this process may use: lower them, or give the process more ' +
        'memory (the chart: resources.limits.memory, heapLimitMb)',
    );
  });

  it('When the container was given less memory than V8 sized its heap for, then the container’s limit counts', () => {
    expect(keptStateWarning(settings('50000', '20000'), 4096 * MB, 4096 * MB)).toBeNull();
    expect(keptStateWarning(settings('50000', '20000'), 4096 * MB, 128 * MB)).toMatch(
      /keep up to 82 MB of heap once full \(66 MB and 16 MB\), more than half of the 128 MB this process may use/,
    );
  });

  it('When both are off, then nothing is said, whatever the heap', () => {
    expect(keptStateWarning(settings('0', '0'), 1 * MB, 1 * MB)).toBeNull();
  });
});
