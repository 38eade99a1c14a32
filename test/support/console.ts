import http from 'node:http';
import request from 'supertest';

/** Tokens of the console's test people (each at least 16 characters). */
export const OPERATOR_TOKEN = 'operator-token-0123456789';
export const VIEWER_TOKEN = 'viewer-token-0123456789';
export const CONSOLE_ENV = {
  CONSOLE_OPERATOR_TOKENS: `olga:${OPERATOR_TOKEN}`,
  CONSOLE_VIEWER_TOKENS: `victor:${VIEWER_TOKEN}`,
};

/** What a browser sends with a form posted from the console's own page. */
export const SAME_ORIGIN = { 'Sec-Fetch-Site': 'same-origin' };

/** The session cookie's name (a `__Host-` cookie). */
export const SESSION_COOKIE = '__Host-console_session';

/** The session cookie ("name=value") a sign-in answer sets, or '' when it sets none. */
export function sessionCookieOf(headers: Record<string, unknown>): string {
  const cookies = ([] as string[]).concat((headers['set-cookie'] as string[] | undefined) ?? []);
  return cookies.find((c) => c.startsWith(`${SESSION_COOKIE}=`))?.split(';')[0] ?? '';
}

/** Signs in with a token (from `localAddress`, when given); answers the session cookie ("name=value"). */
export async function signIn(adminUrl: string, token: string): Promise<string> {
  const res = await request(adminUrl).post('/console/sign-in').set(SAME_ORIGIN).type('form').send({ token });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return sessionCookieOf(res.headers);
}

/** An HTTP agent whose connections leave from `localAddress` (127.0.0.2, 127.0.0.3: another source to the service). */
export const fromAddress = (localAddress: string): http.Agent => new http.Agent({ localAddress });

/** A sign-in attempt from `localAddress` (supertest's answer: 303 signed in, 401 refused, 429 throttled). */
export function signInFrom(adminUrl: string, localAddress: string, token: string): request.Test {
  return request(adminUrl)
    .post('/console/sign-in')
    .agent(fromAddress(localAddress))
    .set(SAME_ORIGIN)
    .type('form')
    .send({ token });
}

/** A metric's value, summed over the series whose labels include `labels` (`result="refused"`, say). */
export async function metricValue(adminUrl: string, name: string, labels: string[] = []): Promise<number> {
  const text = (await request(adminUrl).get('/metrics').expect(200)).text;
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => labels.every((label) => line.includes(label)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** What a person reads of a page: no tags (inline ones join their text, block ones part it), entities decoded. */
export const textOf = (page: string): string =>
  page
    .replace(/<\/?(bdi|span|strong|a|time|code|small)\b[^>]*>/g, '')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/[\u00a0\u202f]/g, ' ')
    .replace(/\s+/g, ' ');
