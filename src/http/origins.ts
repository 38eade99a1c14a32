import { settingEntries } from '../parsing/settingList';

/**
 * Which Host the admin port's console and JSON API answer, and which Origin a browser's POST may come from
 * (pure). A page on another site that rebinds its own name to 127.0.0.1 (DNS rebinding) reaches the port with
 * Host naming that site: refused before anything is looked up. Loopback names and addresses are always
 * admitted, with any port: a browser sends them only to a URL naming loopback (a port-forward picks its own
 * local port), never to a rebound name. Anything else must be one of ADMIN_ORIGINS (the console's public
 * address behind its ingress, the Service's names for clients in the cluster).
 */

/** ADMIN_ORIGINS: `scheme://host[:port]` entries, read as browsers write an Origin. */
export function parseAdminOrigins(value: string): { origins: string[]; problems: string[] } {
  const { entries, problems } = settingEntries(value);
  const origins: string[] = [];
  for (const { text, number } of entries) {
    const url = URL.canParse(text) ? new URL(text) : null;
    if (
      url === null ||
      (url.protocol !== 'https:' && url.protocol !== 'http:') ||
      url.username !== '' ||
      url.password !== '' ||
      !['', '/'].includes(url.pathname) ||
      url.search !== '' ||
      url.hash !== '' ||
      /[/?#]$/.test(text)
    )
      problems.push(`entry ${number}: must be an origin, scheme://host[:port], such as https://console.example.com`);
    else if (origins.includes(url.origin)) problems.push(`entry ${number}: ${url.origin} is listed twice`);
    else origins.push(url.origin);
  }
  return { origins, problems };
}

/** localhost, 127.0.0.0/8 and ::1, as a Host header writes them (the IPv6 one in brackets). */
const LOOPBACK_HOST = /^(localhost|127(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}|\[::1\])(:\d{1,5})?$/;

/**
 * The origins a request whose Host is `host` may be posted from, when the admin port answers that Host; null
 * when it does not (answered 421). A loopback Host's origin is itself, over http or https; an ADMIN_ORIGINS
 * Host's is that entry only.
 */
export function originsForHost(host: string | undefined, admitted: readonly string[]): string[] | null {
  if (host === undefined || host === '' || host.length > 300) return null;
  const lower = host.toLowerCase();
  if (LOOPBACK_HOST.test(lower)) return [`http://${lower}`, `https://${lower}`];
  for (const origin of admitted) {
    const url = new URL(origin);
    const defaultPort = url.protocol === 'https:' ? '443' : '80';
    if (lower === url.host || lower === `${url.hostname}:${defaultPort}`) return [origin];
  }
  return null;
}
