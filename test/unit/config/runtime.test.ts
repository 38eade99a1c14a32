import { adminDoors, configurationWarnings, loadConfig } from '../../../src/config';

describe("the admin port's doors", () => {
  const production = {
    NODE_ENV: 'production',
    SECOND_KEYS: '1:k0123456789abcdef',
    DATABASE_URL: 'postgres://u@db:5432/n',
    RELAY_ENABLED: 'false',
  };

  it('When production leaves the admin port beyond loopback without tokens, then its doors are closed and the start says so', () => {
    const open = loadConfig({ ...production, HOST: '0.0.0.0' });
    expect(adminDoors(open)).toEqual({ dataRoutes: 'closed', events: 'closed', console: 'closed' });
    expect(configurationWarnings(open)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^ADMIN_TOKEN is not set and HOST=0\.0\.0\.0 is not loopback: the admin port's data routes .* answer 401/,
        ),
        expect.stringMatching(/^no console token is set and HOST=0\.0\.0\.0 is not loopback: the console answers 403/),
      ]),
    );
    expect(adminDoors(loadConfig({ ...production, HOST: '127.0.0.1' }))).toEqual({
      dataRoutes: 'open',
      events: 'open',
      console: 'open',
    });
    expect(adminDoors(loadConfig({ ...production, ADMIN_TOKEN: 'admin-token-0123456789' }))).toEqual({
      dataRoutes: 'token',
      events: 'token',
      console: 'tokens',
    });
    expect(adminDoors(loadConfig({ ...production, CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef' }))).toEqual({
      dataRoutes: 'closed',
      events: 'closed',
      console: 'tokens',
    });
  });

  it('When only team tokens are set, then the event routes take them while the data routes stay closed, and the warning does not name /events', () => {
    const teams = loadConfig({ ...production, EVENT_TEAM_TOKENS: 'billing:billing-token-0123456:billing.' });
    expect(adminDoors(teams)).toEqual({ dataRoutes: 'closed', events: 'token', console: 'closed' });
    const warning = configurationWarnings(teams).find((w) => w.startsWith('ADMIN_TOKEN is not set'));
    expect(warning).toContain('(/orders, /refunds, reconcile)');
    expect(configurationWarnings(loadConfig(production)).find((w) => w.startsWith('ADMIN_TOKEN is not set'))).toContain(
      'reconcile, /events)',
    );
  });
});
