import { parseSourceAllowlist, SOURCE_ADDRESS_PRESETS } from '../../src/intake/sourceAddress';

const allow = (value: string) => {
  const { allowlist, problems } = parseSourceAllowlist(value);
  expect(problems).toEqual([]);
  return allowlist;
};

describe('source address allowlist', () => {
  it('When the production preset is used, then exactly its six addresses pass', () => {
    const list = allow('production');
    for (const address of SOURCE_ADDRESS_PRESETS.production) expect(list.allows(address)).toBe(true);
    expect(list.allows('185.68.12.13')).toBe(false);
    expect(list.allows('185.68.14.10')).toBe(false);
  });

  it('When the sandbox preset is used, then sandbox addresses pass and production ones do not', () => {
    const list = allow('sandbox');
    expect(list.allows('185.68.14.28')).toBe(true);
    expect(list.allows('185.68.12.10')).toBe(false);
  });

  it('When the peer is an IPv4-mapped IPv6 address, then it matches its IPv4 form', () => {
    const list = allow('production, 10.0.0.0/8');
    expect(list.allows('::ffff:185.68.12.10')).toBe(true);
    expect(list.allows('::ffff:10.1.2.3')).toBe(true);
    expect(list.allows('::ffff:11.1.2.3')).toBe(false);
  });

  it('When CIDRs of both families are given, then they match their own family', () => {
    const list = allow('192.168.0.0/16,2001:db8::/32,::1');
    expect(list.allows('192.168.7.7')).toBe(true);
    expect(list.allows('2001:db8::42')).toBe(true);
    expect(list.allows('::1')).toBe(true);
    expect(list.allows('2001:db9::1')).toBe(false);
  });

  it('When the address is missing or not an address, then it does not pass', () => {
    const list = allow('production');
    expect(list.allows(undefined)).toBe(false);
    expect(list.allows('not-an-ip')).toBe(false);
  });

  it('When "any" is given, then every address passes and the list says so', () => {
    const list = allow('any');
    expect(list.any).toBe(true);
    expect(list.allows('8.8.8.8')).toBe(true);
  });

  it('When an entry is not an address, CIDR or preset, then it is named in the problems', () => {
    expect(parseSourceAllowlist('production,example.com,10.0.0.0/99').problems).toEqual([
      '"example.com" is not an IP address, CIDR or preset (production, sandbox, any)',
      '"10.0.0.0/99" is not an IP address, CIDR or preset (production, sandbox, any)',
    ]);
  });
  it('When the same addresses come again, after thousands of others, then each answer is the same as the first time', () => {
    const list = allow('production,10.0.0.0/8');
    const first = ['185.68.12.10', '::ffff:185.68.12.27', '10.1.2.3', '9.9.9.9', 'not-an-ip'].map((a) =>
      list.allows(a),
    );
    expect(first).toEqual([true, true, true, false, false]);
    for (let i = 0; i < 3000; i++) list.allows(`172.16.${i >> 8}.${i & 255}`);
    expect(
      ['185.68.12.10', '::ffff:185.68.12.27', '10.1.2.3', '9.9.9.9', 'not-an-ip'].map((a) => list.allows(a)),
    ).toEqual(first);
  });
});
