import crypto from 'node:crypto';
import { holderOf, parseTeamTokens, replayQueueProblem, type AdminTokens } from '../../../src/admin/tokens';

const tokens: AdminTokens = {
  adminToken: 'admin-token-0123456789',
  people: [
    { name: 'olga', token: 'operator-token-0123456', role: 'operator' },
    { name: 'vera', token: 'viewer-token-01234567', role: 'viewer' },
  ],
  teams: parseTeamTokens('billing:billing-token-0123456:billing.,ledger:ledger-token-01234567:ledger-').tokens,
};

describe("the admin port's tokens", () => {
  afterEach(() => jest.restoreAllMocks());

  it('When a token is presented, then its holder is found: the admin, a person or a team; an unknown one has none', () => {
    expect(holderOf(tokens, 'admin-token-0123456789')).toEqual({ kind: 'admin' });
    expect(holderOf(tokens, 'viewer-token-01234567')).toEqual({ kind: 'person', person: tokens.people[1] });
    expect(holderOf(tokens, 'ledger-token-01234567')).toEqual({ kind: 'team', team: tokens.teams[1] });
    expect(holderOf(tokens, 'ledger-token-0123456')).toBeNull();
    expect(holderOf(tokens, '')).toBeNull();
    expect(holderOf({ adminToken: null, people: [], teams: [] }, 'admin-token-0123456789')).toBeNull();
  });

  it.each([
    ['the first token', 'admin-token-0123456789'],
    ['the last token', 'ledger-token-01234567'],
    ['no token', 'not-a-token-at-all-0000'],
  ])(
    'When %s matches, then every configured token is compared all the same, so the time does not tell which',
    (_what, presented) => {
      const compare = jest.spyOn(crypto, 'timingSafeEqual');
      holderOf(tokens, presented);
      expect(compare).toHaveBeenCalledTimes(1 + tokens.people.length + tokens.teams.length);
      // Digests of equal length: the comparison's time does not depend on the token's length either.
      for (const [a, b] of compare.mock.calls) expect([a.byteLength, b.byteLength]).toEqual([32, 32]);
    },
  );

  it("When a replay names a queue, then amq.* is nobody's, and a team's must start with its prefix", () => {
    const [billing] = tokens.teams;
    expect(replayQueueProblem(null, 'amq.gen-JzTY20BRgKO-HjmUJj0wLg')).toMatch(
      /^amq\.gen-\S+ is a name of the broker's own/,
    );
    expect(replayQueueProblem(null, 'AMQ.anything')).not.toBeNull();
    expect(replayQueueProblem(null, 'ledger-replay')).toBeNull();
    expect(replayQueueProblem(billing ?? null, 'billing.replay')).toBeNull();
    expect(replayQueueProblem(billing ?? null, 'ledger-replay')).toBe(
      'the team billing replays only into queues whose names start with billing.',
    );
    expect(replayQueueProblem(billing ?? null, 'billing')).not.toBeNull();
    expect(replayQueueProblem(billing ?? null, 'amq.billing.x')).toMatch(/broker's own/);
  });
});
