import { ConfigError, loadConfig, parseDuration } from '../../src/config';

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
  it('When only SECOND_KEYS is set, then every other setting has its documented default', () => {
    const config = loadConfig({ SECOND_KEYS: '1:k' });
    expect(config).toMatchObject({
      port: 8080,
      adminPort: 9090,
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/notifications',
      migrateOnStart: true,
      databasePipeline: true,
      databaseWriteLanes: 1,
      trustProxy: false,
      notifyBasicAuth: null,
      bodyLimitBytes: 1024 * 1024,
      logLevel: 'info',
      relayEnabled: true,
      amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
      amqpExchange: 'payment.events',
      outboxRetentionMs: 7 * 86_400_000,
    });
    expect(config.sourceAllowlist.allows('185.68.12.10')).toBe(true);
    expect(config.sourceAllowlist.allows('127.0.0.1')).toBe(false);
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
    expect(loadConfig({ SECOND_KEYS: '1:k', DATABASE_WRITE_LANES: '2' }).databaseWriteLanes).toBe(2);
    for (const bad of ['0', '17', 'two', '1.5']) {
      expect(problemsOf({ SECOND_KEYS: '1:k', DATABASE_WRITE_LANES: bad }).map((p) => p.split(':')[0])).toEqual([
        'DATABASE_WRITE_LANES',
      ]);
    }
  });

  it('When DATABASE_PIPELINE is false, then the configuration turns pipelining off, and a value that is not a boolean is refused', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k', DATABASE_PIPELINE: 'false' }).databasePipeline).toBe(false);
    expect(problemsOf({ SECOND_KEYS: '1:k', DATABASE_PIPELINE: 'sometimes' }).map((p) => p.split(':')[0])).toEqual([
      'DATABASE_PIPELINE',
    ]);
  });

  it('When SECOND_KEYS is missing, then the service refuses to start', () => {
    expect(problemsOf({})).toEqual(['SECOND_KEYS: is required (comma-separated posId:secondKey entries)']);
  });

  it('When TRUST_PROXY is a hop count or CIDRs, then Express gets that value', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k', TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ SECOND_KEYS: '1:k', TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
    ]);
    expect(loadConfig({ SECOND_KEYS: '1:k', TRUST_PROXY: 'none' }).trustProxy).toBe(false);
  });

  it('When NOTIFY_BASIC_AUTH has a password with ":", then it splits on the first ":" only', () => {
    expect(loadConfig({ SECOND_KEYS: '1:k', NOTIFY_BASIC_AUTH: 'shop:pa:ss' }).notifyBasicAuth).toEqual({
      user: 'shop',
      password: 'pa:ss',
    });
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
