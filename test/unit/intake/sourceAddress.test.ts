import {
  canonicalAddress,
  parseSourceAllowlist,
  parseTrustProxy,
  resolveSource,
  sourceResolver,
  SOURCE_ADDRESS_PRESETS,
  type SourceAllowlist,
  type TrustProxy,
} from '../../../src/intake/sourceAddress';

const allow = (value: string): SourceAllowlist => {
  const { allowlist, problems } = parseSourceAllowlist(value);
  expect(problems).toEqual([]);
  return allowlist;
};

const trusting = (value: string): TrustProxy => {
  const { trust, problems } = parseTrustProxy(value);
  expect(problems).toEqual([]);
  return trust;
};

const NONE = trusting('none');
const allows = (list: SourceAllowlist, address: string): boolean => {
  const source = resolveSource(address, undefined, NONE, list);
  return source.ok && source.allowed;
};

describe('canonicalAddress: one text per address, or none', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    [' 127.0.0.1 ', '127.0.0.1'],
    ['127.0.0.1:8080', '127.0.0.1'],
    ['::1', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['[::1]', '::1'],
    ['[::1]:443', '::1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:185.68.12.10', '185.68.12.10'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['[::ffff:127.0.0.1]:80', '127.0.0.1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['2001:DB8::0042', '2001:db8::42'],
  ])('When the address is written %j, then it is %s', (text, canonical) => {
    expect(canonicalAddress(text)).toBe(canonical);
  });

  it.each([
    ['127.1', 'fewer parts'],
    ['127.0.1', 'fewer parts'],
    ['2130706433', 'one decimal number'],
    ['0x7f.0.0.1', 'hex'],
    ['0177.0.0.1', 'octal (inet_aton reads 127.0.0.1, Postgres 177.0.0.1)'],
    ['127.000.000.001', 'leading zeros'],
    ['1.2.3.256', 'out of range'],
    ['::ffff:0x7f.0.0.1', 'a hex IPv4 tail'],
    ['::ffff:127.1', 'a short IPv4 tail'],
    ['localhost', 'a name'],
    ['1.2.3.4 5.6.7.8', 'two addresses'],
    ['', 'nothing'],
    ['[1.2.3.4]', 'brackets around IPv4'],
    ['1.2.3.4:99999', 'a port out of range'],
  ])('When the address is written %j (%s), then it is not read as one', (text) => {
    expect(canonicalAddress(text)).toBeNull();
  });
});

describe('source address allowlist', () => {
  it('When the production preset is used, then exactly its six addresses pass', () => {
    const list = allow('production');
    for (const address of SOURCE_ADDRESS_PRESETS.production) expect(allows(list, address)).toBe(true);
    expect(allows(list, '185.68.12.13')).toBe(false);
    expect(allows(list, '185.68.14.10')).toBe(false);
    expect(list.production).toBe(true);
  });

  it('When the sandbox preset is used, then sandbox addresses pass and production ones do not', () => {
    const list = allow('sandbox');
    expect(allows(list, '185.68.14.28')).toBe(true);
    expect(allows(list, '185.68.12.10')).toBe(false);
    expect(list.production).toBe(false);
  });

  it('When the peer is an IPv4-mapped IPv6 address, then it matches its IPv4 form', () => {
    const list = allow('production, 10.0.0.0/8, ::ffff:172.16.0.0/108');
    expect(allows(list, '::ffff:185.68.12.10')).toBe(true);
    expect(allows(list, '::ffff:10.1.2.3')).toBe(true);
    expect(allows(list, '::ffff:11.1.2.3')).toBe(false);
    expect(allows(list, '172.16.1.1')).toBe(true);
  });

  it('When CIDRs of both families are given, then they match their own family', () => {
    const list = allow('192.168.0.0/16,2001:db8::/32,::1');
    expect(allows(list, '192.168.7.7')).toBe(true);
    expect(allows(list, '2001:db8::42')).toBe(true);
    expect(allows(list, '::1')).toBe(true);
    expect(allows(list, '2001:db9::1')).toBe(false);
  });

  it('When "any" is given, then every address passes and the list says so', () => {
    const list = allow('any');
    expect(list.any).toBe(true);
    expect(allows(list, '8.8.8.8')).toBe(true);
  });

  it('When an entry is not an address, CIDR or preset, then it is named in the problems', () => {
    expect(parseSourceAllowlist('production,example.com,10.0.0.0/99,127.1').problems).toEqual([
      'entry 2 ("example.com") is not an IP address, CIDR or preset (production, sandbox, any)',
      'entry 3 ("10.0.0.0/99") is not an IP address, CIDR or preset (production, sandbox, any)',
      'entry 4 ("127.1") is not an IP address, CIDR or preset (production, sandbox, any)',
    ]);
    expect(parseSourceAllowlist('10.0.0.1,,10.0.0.2;10.0.0.3').problems).toEqual([
      "entry 2 is empty (a stray ',')",
      "entry 3 holds a space or ';': entries are separated by ','",
    ]);
  });
});

describe('resolveSource: the sender behind trusted proxies', () => {
  const list = allow('127.0.0.1, 185.68.12.10');

  it('When no proxy is trusted, then X-Forwarded-For is ignored', () => {
    expect(resolveSource('10.9.9.9', '127.0.0.1', NONE, list)).toEqual({
      ok: true,
      address: '10.9.9.9',
      allowed: false,
    });
  });

  it('When the proxies are named, then only their X-Forwarded-For is believed', () => {
    const trust = trusting('10.0.0.0/8');
    expect(resolveSource('10.1.1.1', '185.68.12.10', trust, list)).toEqual({
      ok: true,
      address: '185.68.12.10',
      allowed: true,
    });
    // A peer that is not a trusted proxy cannot choose its address.
    expect(resolveSource('127.0.0.2', '127.0.0.1', trust, list)).toEqual({
      ok: true,
      address: '127.0.0.2',
      allowed: false,
    });
    // Entries left of the first untrusted hop were written by the client: never read.
    expect(resolveSource('10.1.1.1', '185.68.12.10, 6.6.6.6', trust, list)).toEqual({
      ok: true,
      address: '6.6.6.6',
      allowed: false,
    });
    expect(resolveSource('10.1.1.1', '1.1.1.1, 185.68.12.10, 10.2.2.2', trust, list)).toMatchObject({
      address: '185.68.12.10',
    });
  });

  it('When a hop count is trusted, then that many hops are believed, whoever they are', () => {
    const trust = trusting('1');
    expect(resolveSource('127.0.0.2', '127.0.0.1', trust, list)).toMatchObject({ address: '127.0.0.1', allowed: true });
    expect(resolveSource('127.0.0.2', undefined, trust, list)).toMatchObject({ address: '127.0.0.2' });
  });

  it.each(['127.1', '2130706433', '0x7f.0.0.1', '0177.0.0.1', 'garbage'])(
    'When the X-Forwarded-For entry that names the sender is %j, then the request is refused, not guessed',
    (entry) => {
      expect(resolveSource('10.1.1.1', entry, trusting('10.0.0.0/8'), list)).toEqual({ ok: false });
    },
  );

  it('When the sender is written in another valid form, then the allowlist and the audit see one address', () => {
    expect(resolveSource('10.1.1.1', ' [::ffff:127.0.0.1]:5678 ', trusting('10.0.0.0/8'), list)).toEqual({
      ok: true,
      address: '127.0.0.1',
      allowed: true,
    });
  });

  it('When the socket address is missing, then the request is refused', () => {
    expect(resolveSource(undefined, undefined, NONE, list)).toEqual({ ok: false });
  });

  it('When TRUST_PROXY is not none, a count or addresses, then it is a problem', () => {
    expect(parseTrustProxy('ingress').problems).toEqual([
      'entry 1 ("ingress") is not a proxy address or CIDR (the whole value may be none or a hop count)',
    ]);
    expect(parseTrustProxy('10.0.0.1,1').problems).toEqual([
      'entry 2 ("1") is not a proxy address or CIDR (the whole value may be none or a hop count)',
    ]);
    expect(parseTrustProxy('10.0.0.0/8,').problems).toEqual(["entry 2 is empty (a stray ',')"]);
  });

  it('When the same addresses come again, after thousands of others, then each answer is the same as the first time', () => {
    const resolve = sourceResolver(trusting('10.0.0.0/8'), allow('production,10.0.0.0/8'));
    const ask = () =>
      [
        ['185.68.12.10', undefined],
        ['::ffff:185.68.12.27', undefined],
        ['10.1.2.3', '185.68.12.11'],
        ['9.9.9.9', undefined],
        ['not-an-ip', undefined],
      ].map(([socket, forwarded]) => resolve(socket, forwarded));
    const first = ask();
    expect(first.map((s) => s.ok && s.allowed)).toEqual([true, true, true, false, false]);
    for (let i = 0; i < 3000; i++) resolve(`172.16.${i >> 8}.${i & 255}`, undefined);
    expect(ask()).toEqual(first);
  });
});
