import { originsForHost, parseAdminOrigins } from '../../../src/http/origins';

describe('admin origins', () => {
  const admitted = parseAdminOrigins('https://console.example.com,http://nr.payments.svc:9090').origins;

  it('When ADMIN_ORIGINS is read, then only origins are taken, each problem named by entry', () => {
    expect(admitted).toEqual(['https://console.example.com', 'http://nr.payments.svc:9090']);
    expect(
      parseAdminOrigins('https://a.example.com/console,ftp://b.example.com,x,https://u:p@c.example.com').problems,
    ).toEqual([
      expect.stringMatching(/^entry 1: must be an origin/),
      expect.stringMatching(/^entry 2: must be an origin/),
      expect.stringMatching(/^entry 3: must be an origin/),
      expect.stringMatching(/^entry 4: must be an origin/),
    ]);
    expect(parseAdminOrigins('https://a.example.com,https://A.example.com:443').problems).toEqual([
      'entry 2: https://a.example.com is listed twice',
    ]);
  });

  it('When a Host is loopback or admitted, then the origins a form may come from are its own; else none', () => {
    expect(originsForHost('127.0.0.1:9090', admitted)).toEqual(['http://127.0.0.1:9090', 'https://127.0.0.1:9090']);
    expect(originsForHost('LOCALHOST:8888', admitted)).toEqual(['http://localhost:8888', 'https://localhost:8888']);
    expect(originsForHost('[::1]:9090', admitted)).toEqual(['http://[::1]:9090', 'https://[::1]:9090']);
    expect(originsForHost('console.example.com', admitted)).toEqual(['https://console.example.com']);
    expect(originsForHost('console.example.com:443', admitted)).toEqual(['https://console.example.com']);
    expect(originsForHost('nr.payments.svc:9090', admitted)).toEqual(['http://nr.payments.svc:9090']);
    for (const host of [
      undefined,
      '',
      'evil.example:9090',
      'console.example.com:9090',
      'nr.payments.svc',
      '127.0.0.1.evil.example',
      '127.0.0.256:9090',
      'localhost.evil.example',
      '10.0.0.5:9090',
      'x'.repeat(400),
    ])
      expect(originsForHost(host, admitted)).toBeNull();
  });
});
