import { openSession, parseConsoleTokens, sealSession, tokenHolder } from '../../src/console/session';

const secret = Buffer.from('a-secret-of-thirty-two-characters!!');

describe('console sessions', () => {
  it('When a sealed session is opened, then it reads back; tampered, forged or expired, it is refused', () => {
    const sealed = sealSession(secret, { name: 'olga', role: 'viewer', expiresAt: 2000 });
    expect(openSession(secret, sealed, 1999)).toEqual({ session: { name: 'olga', role: 'viewer', expiresAt: 2000 } });
    expect(openSession(secret, sealed, 2000)).toEqual({ problem: 'expired' });
    expect(openSession(secret, sealed.replace('.viewer.', '.operator.'), 1)).toEqual({ problem: 'forged' });
    expect(openSession(Buffer.from('another secret of 32 characters!!'), sealed, 1)).toEqual({ problem: 'forged' });
    expect(openSession(secret, 'v1.olga.viewer.2000', 1)).toEqual({ problem: 'forged' });
  });

  it('When token lists are read, then names and lengths are checked, and a token finds its holder', () => {
    const { tokens, problems } = parseConsoleTokens(
      'olga:0123456789abcdef,bad name:0123456789abcdef,v:short',
      'operator',
    );
    expect(tokens).toEqual([{ name: 'olga', token: '0123456789abcdef', role: 'operator' }]);
    expect(problems).toHaveLength(2);
    expect(problems.join(' ')).not.toContain('short');
    expect(tokenHolder(tokens, '0123456789abcdef')?.name).toBe('olga');
    expect(tokenHolder(tokens, '0123456789abcdeX')).toBeNull();
  });
});
