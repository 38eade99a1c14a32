import request from 'supertest';

/** Tokens of the console's test people (each at least 16 characters). */
export const OPERATOR_TOKEN = 'operator-token-0123456789';
export const VIEWER_TOKEN = 'viewer-token-0123456789';
export const CONSOLE_ENV = {
  CONSOLE_OPERATOR_TOKENS: `olga:${OPERATOR_TOKEN}`,
  CONSOLE_VIEWER_TOKENS: `victor:${VIEWER_TOKEN}`,
  CONSOLE_SESSION_SECRET: 'console-test-session-secret-0123456789',
};

/** What a browser sends with a form posted from the console's own page. */
export const SAME_ORIGIN = { 'Sec-Fetch-Site': 'same-origin' };

/** Signs in with a token; answers the session cookie ("name=value"). */
export async function signIn(adminUrl: string, token: string): Promise<string> {
  const res = await request(adminUrl).post('/console/sign-in').set(SAME_ORIGIN).type('form').send({ token });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0] ?? '';
  return cookie.split(';')[0] ?? '';
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
