import ipaddr from 'ipaddr.js';
import { settingEntries } from '../parsing/settingList';

/**
 * Who sent a request, read one way: every address (the socket peer's, each X-Forwarded-For entry, each
 * allowlist and TRUST_PROXY entry) goes through canonicalAddress, and the one canonical text it gives is
 * what the proxies are trusted by, what the allowlist matches and what the audit row stores. Forms that
 * parsers read differently (127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1: inet_aton reads the last as
 * 127.0.0.1, Postgres as 177.0.0.1) are refused rather than guessed.
 */

/** Published source addresses of the payment service (spec, "Events", delivery rule 7). */
export const SOURCE_ADDRESS_PRESETS: Readonly<Record<'production' | 'sandbox', readonly string[]>> = {
  production: ['185.68.12.10', '185.68.12.11', '185.68.12.12', '185.68.12.26', '185.68.12.27', '185.68.12.28'],
  sandbox: ['185.68.14.10', '185.68.14.11', '185.68.14.12', '185.68.14.26', '185.68.14.27', '185.68.14.28'],
};

type Address = ipaddr.IPv4 | ipaddr.IPv6;
/** An address and the prefix length that makes it a network. */
export type AddressRange = [Address, number];

/**
 * The address a text names, or undefined when it is not one written the one unambiguous way: dotted
 * decimal IPv4 (four parts, no leading zeros) or IPv6, optionally with surrounding spaces, a port
 * (`1.2.3.4:80`, `[::1]:80`), brackets or a zone index (dropped: it names an interface, not a host).
 * IPv4-mapped IPv6 is its IPv4 address.
 */
function addressOf(text: string): Address | undefined {
  let t = text.trim();
  // [IPv6] or [IPv6]:port, IPv4:port.
  const withPort = /^\[([^\]]*:[^\]]*)\](?::(\d{1,5}))?$/.exec(t) ?? /^([\d.]+):(\d{1,5})$/.exec(t);
  if (withPort) {
    if (withPort[2] !== undefined && Number(withPort[2]) > 65535) return undefined;
    t = withPort[1] as string;
  }
  if (t.includes(':')) t = t.replace(/%[\w.-]+$/, '');
  if (ipaddr.IPv4.isValidFourPartDecimal(t)) return ipaddr.IPv4.parse(t);
  if (!t.includes(':') || !ipaddr.IPv6.isValid(t)) return undefined;
  // An IPv4 tail inside IPv6 must be dotted decimal too.
  if (t.includes('.') && !ipaddr.IPv4.isValidFourPartDecimal(t.slice(t.lastIndexOf(':') + 1))) return undefined;
  const v6 = ipaddr.IPv6.parse(t);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/** The one text of an address (what the audit row stores), or null when it is not read as one. */
export function canonicalAddress(text: string): string | null {
  return addressOf(text)?.toString() ?? null;
}

function rangeOf(entry: string): AddressRange | undefined {
  const slash = entry.indexOf('/');
  const address = addressOf(slash === -1 ? entry : entry.slice(0, slash));
  if (!address) return undefined;
  const full = address.kind() === 'ipv4' ? 32 : 128;
  if (slash === -1) return [address, full];
  const bits = entry.slice(slash + 1).trim();
  if (!/^\d{1,3}$/.test(bits)) return undefined;
  // An IPv4-mapped IPv6 range (::ffff:10.0.0.0/104) is the IPv4 range it maps.
  const mapped = address.kind() === 'ipv4' && entry.includes(':') ? 96 : 0;
  const prefix = Number(bits) - mapped;
  return prefix >= 0 && prefix <= full ? [address, prefix] : undefined;
}

/** The network of a range: its address with the host bits cleared. */
function networkOf([address, bits]: AddressRange): Address {
  const bytes = address.toByteArray().map((byte, i) => {
    const kept = Math.min(8, Math.max(0, bits - i * 8));
    return byte & ((0xff << (8 - kept)) & 0xff);
  });
  return ipaddr.fromByteArray(bytes);
}

/**
 * An address or CIDR entry as a range, or the problem that refuses it. A CIDR with host bits set
 * (10.0.0.5/8) is refused: it would be read as its network, but the one address may have been meant.
 */
function readRange(number: number, entry: string, what: string): AddressRange | string {
  const range = rangeOf(entry);
  if (!range) return `entry ${number} ("${entry}") is not ${what}`;
  const network = networkOf(range);
  if (network.toString() === range[0].toString()) return range;
  return (
    `entry ${number} ("${entry}") has host bits set: write ${network.toString()}/${range[1]} for the network, ` +
    `or ${range[0].toString()} alone for the one address`
  );
}

const inRanges = (address: Address, ranges: readonly AddressRange[]): boolean =>
  ranges.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));

const entriesOf = (value: string): string[] =>
  value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');

/** Which source addresses may deliver notifications. `any` disables the check. */
export interface SourceAllowlist {
  readonly any: boolean;
  /** Whether the preset `production` is in the list (the start-up checks warn about the sandbox key with it). */
  readonly production: boolean;
  readonly ranges: readonly AddressRange[];
  /** The entries as configured (addresses, CIDRs, presets), for the start log. */
  readonly entries: readonly string[];
}

/** Parses ALLOWED_SOURCE_IPS: comma-separated addresses, CIDRs and the presets `production`, `sandbox` and `any`. */
export function parseSourceAllowlist(value: string): { allowlist: SourceAllowlist; problems: string[] } {
  const ranges: AddressRange[] = [];
  let any = false;
  let production = false;
  const { entries: numbered, problems } = settingEntries(value);
  const entries = numbered.map(({ text }) => text);
  for (const { number, text: entry } of numbered) {
    const preset = entry.toLowerCase();
    if (preset === 'any') {
      any = true;
    } else if (preset === 'production' || preset === 'sandbox') {
      production ||= preset === 'production';
      for (const address of SOURCE_ADDRESS_PRESETS[preset]) ranges.push(rangeOf(address) as AddressRange);
    } else {
      const range = readRange(number, entry, 'an IP address, CIDR or preset (production, sandbox, any)');
      if (typeof range === 'string') problems.push(range);
      else ranges.push(range);
    }
  }
  const anyAt = entries.findIndex((e) => e.toLowerCase() === 'any');
  if (anyAt !== -1 && entries.length > 1)
    problems.push(
      `entry ${numbered[anyAt]?.number ?? anyAt + 1} is any, which lets every address in: write it alone, or ` +
        'list only the addresses meant',
    );
  return { allowlist: { any, production, ranges, entries }, problems };
}

/**
 * Allowlist entries that add nothing: each one whose addresses an earlier entry (or a wider later one) already
 * lets in, a repeat most likely meant as another address. Warned about at start, not refused: the list means
 * the same with them. Entries are addresses, CIDRs and presets (not secrets), named as written.
 */
export function redundantEntries(entries: readonly string[]): string[] {
  const rangesOf = (entry: string): AddressRange[] => {
    const preset = entry.toLowerCase();
    if (preset === 'production' || preset === 'sandbox')
      return SOURCE_ADDRESS_PRESETS[preset].map((address) => rangeOf(address) as AddressRange);
    const range = rangeOf(entry);
    return range ? [range] : [];
  };
  const read = entries.map(rangesOf);
  const covers = (wide: readonly AddressRange[], narrow: readonly AddressRange[]): boolean =>
    narrow.length > 0 &&
    narrow.every(([address, bits]) =>
      wide.some(([net, netBits]) => net.kind() === address.kind() && netBits <= bits && address.match(net, netBits)),
    );
  const found: string[] = [];
  read.forEach((ranges, j) => {
    const by = read.findIndex((other, i) => i !== j && covers(other, ranges) && (i < j || !covers(ranges, other)));
    if (by !== -1)
      found.push(
        `entry ${j + 1} ("${entries[j] ?? ''}") is already let in by entry ${by + 1} ("${entries[by] ?? ''}")`,
      );
  });
  return found;
}

/**
 * TRUST_PROXY: which proxies' X-Forwarded-For is believed. None: the socket peer is the sender. A hop
 * count: that many proxies, whoever they are (any peer that connects directly can then choose its
 * address: only where nothing but the proxy can reach the port). Addresses/CIDRs: those proxies only.
 */
export type TrustProxy =
  { kind: 'none' } | { kind: 'hops'; hops: number } | { kind: 'proxies'; ranges: AddressRange[] };

export function parseTrustProxy(value: string): { trust: TrustProxy; problems: string[] } {
  const text = value.trim();
  if (text === '' || ['none', 'false', '0'].includes(text.toLowerCase()))
    return { trust: { kind: 'none' }, problems: [] };
  if (/^\d+$/.test(text)) return { trust: { kind: 'hops', hops: Number(text) }, problems: [] };
  const ranges: AddressRange[] = [];
  const { entries, problems } = settingEntries(text);
  for (const { number, text: entry } of entries) {
    const range = readRange(number, entry, 'a proxy address or CIDR (the whole value may be none or a hop count)');
    if (typeof range === 'string') problems.push(range);
    else ranges.push(range);
  }
  return { trust: problems.length > 0 ? { kind: 'none' } : { kind: 'proxies', ranges }, problems };
}

/** Where a request came from: the sender's canonical address, or why it cannot be told. */
export type SourceAddress = { ok: true; address: string; allowed: boolean } | { ok: false };

/**
 * The sender of a request and whether the allowlist lets it in: the socket peer, or with trusted proxies
 * the X-Forwarded-For entry right of which every hop is a trusted proxy (Express's `trust proxy` rule).
 * An address on that walk that is not read as one refuses the request (ok: false), never a guess.
 */
export function resolveSource(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trust: TrustProxy,
  allowlist: SourceAllowlist,
): SourceAddress {
  const hops = [socketAddress ?? '', ...(trust.kind === 'none' ? [] : entriesOf(forwardedFor ?? '').reverse())];
  let sender: Address | undefined;
  for (let i = 0; i < hops.length; i++) {
    sender = addressOf(hops[i] as string);
    if (!sender) return { ok: false };
    const trusted = trust.kind === 'hops' ? i < trust.hops : trust.kind === 'proxies' && inRanges(sender, trust.ranges);
    if (!trusted) break;
  }
  if (!sender) return { ok: false };
  return { ok: true, address: sender.toString(), allowed: allowlist.any || inRanges(sender, allowlist.ranges) };
}

const MAX_REMEMBERED = 1024;

/**
 * resolveSource, remembered: the sender uses a handful of addresses, and parsing and matching each
 * request's address was about 3 % of the receiver's thread. Bounded, so a flood from many addresses
 * cannot grow it without limit.
 */
export function sourceResolver(
  trust: TrustProxy,
  allowlist: SourceAllowlist,
): (socketAddress: string | undefined, forwardedFor: string | undefined) => SourceAddress {
  const seen = new Map<string, SourceAddress>();
  return (socketAddress, forwardedFor) => {
    const key = trust.kind === 'none' ? (socketAddress ?? '') : `${socketAddress ?? ''}\n${forwardedFor ?? ''}`;
    let result = seen.get(key);
    if (result === undefined) {
      result = resolveSource(socketAddress, forwardedFor, trust, allowlist);
      if (seen.size >= MAX_REMEMBERED) seen.clear();
      seen.set(key, result);
    }
    return result;
  };
}

const EVERYONE: SourceAllowlist = { any: true, production: false, ranges: [], entries: ['any'] };

/**
 * Who a request to the admin port comes from (the console's sign-in throttle, the audit trail): the same rule as
 * the intake's, the proxies TRUST_PROXY names believed and no allowlist; null when an address on the way cannot be
 * read as one.
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trust: TrustProxy,
): string | null {
  const source = resolveSource(socketAddress, forwardedFor, trust, EVERYONE);
  return source.ok ? source.address : null;
}
