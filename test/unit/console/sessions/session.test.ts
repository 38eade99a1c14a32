import {
  holdersByName,
  judgeSession,
  newSession,
  parseConsoleTokens,
  sessionCookies,
  sessionKey,
  tokenFingerprint,
  TOUCH_EVERY_MS,
  type StoredSession,
} from '../../../../src/console/sessions/session';

describe('console sessions', () => {
  const olga = { name: 'olga', token: 'olga-token-0123456789', role: 'operator' as const };
  const holders = holdersByName([olga, { name: 'vera', token: 'vera-token-0123456789', role: 'viewer' }]);
  const stored: StoredSession = {
    name: 'olga',
    role: 'operator',
    tokenFingerprint: tokenFingerprint(olga.token),
    createdAt: new Date(0),
    lastSeenAt: new Date(1_000_000),
    expiresAt: new Date(9_000_000),
  };
  const IDLE = 600_000;

  it('When a session is judged, then it stands until it expires, idles, or its name no longer holds that token and role', () => {
    expect(judgeSession(stored, holders, 1_000_000 + 1000, IDLE)).toEqual({ stands: true, touch: false });
    expect(judgeSession(stored, holders, 1_000_000 + TOUCH_EVERY_MS, IDLE)).toEqual({ stands: true, touch: true });
    expect(judgeSession(stored, holders, 1_000_000 + IDLE + 1, IDLE)).toEqual({ stands: false, end: 'idle' });
    expect(judgeSession({ ...stored, lastSeenAt: new Date(8_999_000) }, holders, 9_000_000, IDLE)).toEqual({
      stands: false,
      end: 'expired',
    });
    for (const changed of [
      holdersByName([]),
      holdersByName([{ ...olga, role: 'viewer' }]),
      holdersByName([{ ...olga, token: 'olga-new-token-0123456789' }]),
    ])
      expect(judgeSession(stored, changed, 1_000_001, IDLE)).toEqual({ stands: false, end: 'access_changed' });
  });

  it('When session ids are made and read, then each is random, keyed by its hash, and nothing else is looked up', () => {
    const a = newSession();
    const b = newSession();
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.id).not.toBe(b.id);
    expect(sessionKey(a.id)).toEqual(a.key);
    expect(a.key.toString('hex')).not.toContain(Buffer.from(a.id).toString('hex'));
    for (const bad of ['', 'x', `${a.id}=`, `${a.id.slice(0, 42)}!`, a.id.repeat(2), 'v1.olga.operator.9.abc'])
      expect(sessionKey(bad)).toBeNull();
  });

  it('When the Cookie header holds the session cookie twice, then both values are seen (and refused upstream)', () => {
    expect(sessionCookies(undefined)).toEqual([]);
    expect(sessionCookies('a=1; __Host-console_session=X; b=2')).toEqual(['X']);
    expect(sessionCookies('__Host-console_session=X; __Host-console_session=Y')).toEqual(['X', 'Y']);
    expect(sessionCookies('console_session=old; __Host-console_session_x=1')).toEqual([]);
  });

  it('When token lists are read, then names and lengths are checked', () => {
    const { tokens, problems } = parseConsoleTokens(
      'olga:0123456789abcdef,bad name:0123456789abcdef,v:short',
      'operator',
    );
    expect(tokens).toEqual([{ name: 'olga', token: '0123456789abcdef', role: 'operator' }]);
    expect(problems).toHaveLength(2);
    expect(problems.join(' ')).not.toContain('short');
  });
});
