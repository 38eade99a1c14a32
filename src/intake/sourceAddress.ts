import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

/** Published source addresses of the payment service (spec, "Events", delivery rule 7). */
export const SOURCE_ADDRESS_PRESETS: Readonly<Record<'production' | 'sandbox', readonly string[]>> = {
  production: ['185.68.12.10', '185.68.12.11', '185.68.12.12', '185.68.12.26', '185.68.12.27', '185.68.12.28'],
  sandbox: ['185.68.14.10', '185.68.14.11', '185.68.14.12', '185.68.14.26', '185.68.14.27', '185.68.14.28'],
};

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

const MAX_REMEMBERED_ADDRESSES = 1024;

/** Which source addresses may deliver notifications. `any` disables the check. */
export interface SourceAllowlist {
  readonly any: boolean;
  allows(address: string | undefined): boolean;
}

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) becomes its IPv4 form so one rule covers both spellings. */
export function normalizeAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  return ipaddr.process(address);
}

function parseRange(entry: string): Range | undefined {
  try {
    if (entry.includes('/')) {
      const [address, bits] = ipaddr.parseCIDR(entry);
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
        return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
      }
      return [address, bits];
    }
    const address = normalizeAddress(entry);
    if (!address) return undefined;
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return undefined;
  }
}

/**
 * Parses ALLOWED_SOURCE_IPS: comma-separated addresses, CIDRs and the presets `production`,
 * `sandbox` and `any`.
 */
export function parseSourceAllowlist(value: string): { allowlist: SourceAllowlist; problems: string[] } {
  const problems: string[] = [];
  const ranges: Range[] = [];
  let any = false;
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) problems.push('at least one address, CIDR or preset is required');
  for (const entry of entries) {
    const preset = entry.toLowerCase();
    if (preset === 'any') {
      any = true;
    } else if (preset === 'production' || preset === 'sandbox') {
      for (const address of SOURCE_ADDRESS_PRESETS[preset]) ranges.push(parseRange(address) as Range);
    } else {
      const range = parseRange(entry);
      if (range) ranges.push(range);
      else problems.push(`"${entry}" is not an IP address, CIDR or preset (production, sandbox, any)`);
    }
  }
  const decide = (address: string): boolean => {
    const parsed = normalizeAddress(address);
    return (
      parsed !== undefined && ranges.some(([net, bits]) => net.kind() === parsed.kind() && parsed.match(net, bits))
    );
  };
  // The sender uses a handful of addresses: each is parsed and matched once, then remembered
  // (bounded, so a flood from many addresses cannot grow it without limit).
  const decided = new Map<string, boolean>();
  const allowlist: SourceAllowlist = {
    any,
    allows(address) {
      if (any) return true;
      if (address === undefined) return false;
      let allowed = decided.get(address);
      if (allowed === undefined) {
        allowed = decide(address);
        if (decided.size >= MAX_REMEMBERED_ADDRESSES) decided.clear();
        decided.set(address, allowed);
      }
      return allowed;
    },
  };
  return { allowlist, problems };
}

/**
 * Which address sent the request: the socket peer, or with TRUST_PROXY the X-Forwarded-For entry
 * that setting selects (proxy-addr, the same rules Express applies for `trust proxy`).
 */
export function clientAddressResolver(
  trustProxy: false | number | string[],
): (req: IncomingMessage) => string | undefined {
  if (trustProxy === false) return (req) => req.socket.remoteAddress;
  const trust =
    typeof trustProxy === 'number'
      ? (_address: string, hop: number) => hop < trustProxy
      : proxyaddr.compile(trustProxy);
  return (req) => proxyaddr(req, trust);
}
