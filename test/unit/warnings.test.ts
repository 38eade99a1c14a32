import { configurationWarnings, loadConfig } from '../../src/config';

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

  it('When reconciliation is on, ADMIN_TOKEN unset and the admin port beyond loopback, then a warning names both settings', () => {
    const reconciling = {
      SECOND_KEYS: '1:k0123456789abcdef',
      PAYMENT_API_URL: 'https://api.example.com',
      PAYMENT_API_CREDENTIALS: '1:c:s',
    };
    const [warning] = warningsOf({ ...reconciling, HOST: '0.0.0.0' });
    expect(warning).toMatch(
      /PAYMENT_API_URL is set .* ADMIN_TOKEN is not, while the admin port listens on HOST=0\.0\.0\.0/,
    );
    expect(warningsOf({ ...reconciling, HOST: '10.1.2.3' })).toHaveLength(1);
    expect(warningsOf({ ...reconciling, HOST: '127.0.0.1' })).toEqual([]);
    expect(warningsOf({ ...reconciling, HOST: '::1' })).toEqual([]);
    expect(warningsOf({ ...reconciling, ADMIN_TOKEN: 'a-token-of-sixteen-chars' })).toEqual([]);
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', HOST: '0.0.0.0' })).toEqual([]);
  });

  it('When TRUST_PROXY is a hop count, then a warning says any peer can choose its address; CIDRs do not warn', () => {
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '1' })).toEqual([
      expect.stringMatching(/TRUST_PROXY=1 believes X-Forwarded-For from whichever peer connects/),
    ]);
    expect(warningsOf({ SECOND_KEYS: '1:k0123456789abcdef', TRUST_PROXY: '10.0.0.0/8' })).toEqual([]);
  });
});
