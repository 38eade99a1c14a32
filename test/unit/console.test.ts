import { consoleTokens, loadConfig } from '../../src/config';
import { href, html } from '../../src/console/html';
import { openSession, parseConsoleTokens, sealSession, tokenHolder } from '../../src/console/session';

const secret = Buffer.from('a-secret-of-thirty-two-characters!!');

describe('console templates', () => {
  it('When values hold markup, then they are escaped; markup made by the tag is kept', () => {
    const name = '<script>alert("x")</script>&';
    expect(html`<p title="${name}">${name}${html`<b>${1}</b>`}${[name, null, false, undefined]}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;<b>1</b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;</p>',
    );
  });

  it('When a link is built from a payload value, then it stays a path of ours', () => {
    expect(href(['orders', 'javascript:alert(1)'])).toBe('/console/orders/javascript%3Aalert(1)');
    expect(href(['orders', '../../x?y#z'])).toBe('/console/orders/..%2F..%2Fx%3Fy%23z');
    expect(href(['deliveries'], { outcome: 'a&b', pos: '' })).toBe('/console/deliveries?outcome=a%26b');
  });
});

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

describe('console settings', () => {
  const production = {
    NODE_ENV: 'production',
    SECOND_KEYS: '1:k0123456789abcdef',
    DATABASE_URL: 'postgres://u@db:5432/n',
    RELAY_ENABLED: 'false',
  };

  it('When tokens are set in production without a session secret, then the start is refused naming it', () => {
    expect(() => loadConfig({ ...production, CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef' })).toThrow(
      /CONSOLE_SESSION_SECRET: is required/,
    );
    expect(() =>
      loadConfig({
        ...production,
        CONSOLE_VIEWER_TOKENS: 'vera:0123456789abcdef',
        CONSOLE_SESSION_SECRET: 's'.repeat(32),
      }),
    ).not.toThrow();
  });

  it('When ADMIN_TOKEN is set, then it signs in to the console as the operator admin', () => {
    const config = loadConfig({ ...production, ADMIN_TOKEN: 'admin-token-0123456789' });
    expect(consoleTokens(config)).toEqual([{ name: 'admin', token: 'admin-token-0123456789', role: 'operator' }]);
    expect(config.auditRetentionMs).toBe(365 * 86_400_000);
    expect(config.consoleViewersSeePersonalData).toBe(false);
  });
});
