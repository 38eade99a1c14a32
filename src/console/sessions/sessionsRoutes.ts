import type { Request, Router } from 'express';
import { confirmedActions, type ActionSettings } from '../actions/confirmedAction';
import type { Access } from '../frame/access';
import { refusal, send, type ConsoleOptions, type PageFrame } from '../frame/consoleRouting';
import { href, html } from '../frame/html';
import { plural } from '../frame/parts';
import { NAME } from './session';
import { endSessionsOf, signedIn } from './sessionQueries';
import { sessionsPage } from './sessionsView';

/** What the sessions page uses of the console's options. */
export type SessionsSettings = ActionSettings & Pick<ConsoleOptions, 'sessionIdleMs'> & Pick<PageFrame, 'now'>;

/** Who is signed in (operators only), and the action that ends every session of a person. */
export function sessionsRoutes(router: Router, access: Access, settings: SessionsSettings): void {
  const { db, limited, now, context } = settings;
  const action = confirmedActions(router, access, settings);

  router.get('/sessions', async (req, res) => {
    const { viewer, data: sessions } = await access.readFor(req, res, 'operator', () =>
      limited(res, () => signedIn(db, now(), settings.sessionIdleMs)),
    );
    send(res, 200, sessionsPage(context(req, viewer), sessions));
  });

  const nameOf = (req: Request): string => {
    const name = typeof req.params.name === 'string' ? req.params.name : '';
    if (!NAME.test(name)) throw refusal(400, 'bad_request', 'Bad name', 'A name is letters, digits and _@-, up to 64.');
    return name;
  };

  action(
    '/sessions/:name/end',
    (req) => ({ action: 'end_sessions', target: nameOf(req), orderId: null }),
    (req) => {
      const name = nameOf(req);
      return {
        title: `End every session of ${name}`,
        explanation: html`<p>
          Everyone signed in as <strong>${name}</strong>, in any browser, is signed out at their next request, on every
          replica. Their token still signs in: to keep them out, remove their entry from the console's tokens.
        </p>`,
        action: href(['sessions', name, 'end']),
        fields: {},
        button: 'end their sessions',
        cancel: { label: 'Back to who is signed in', href: href(['sessions']) },
      };
    },
    async (req, res, _ctx, done) => {
      const name = nameOf(req);
      const ended = await limited(res, () => endSessionsOf(db, name));
      await done('done', `${ended} session(s) ended`);
      return {
        status: 200,
        title: `Ended the sessions of ${name}`,
        outcome: 'done',
        headline: html`${plural(ended, 'session')} of ${name} ended: they sign in again to go on.`,
        facts: [{ label: 'What changed', value: html`${ended} session(s) ended, on every replica.` }],
        back: { label: 'Back to who is signed in', href: href(['sessions']) },
      };
    },
  );
}
