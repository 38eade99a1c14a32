import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { time, value } from '../frame/parts';
import type { SignedInSession } from './sessionQueries';

/** Who is signed in now (operators only), each name with the way to end all its sessions. */
export function sessionsPage(ctx: PageContext, sessions: readonly SignedInSession[]): Html {
  const names = [...new Set(sessions.map((s) => s.name))];
  return layout(
    'Signed in',
    ctx,
    html`<h1>Who is signed in now</h1>
      <p class="muted">
        Sessions neither expired nor idle, on every replica. Ending a person's sessions signs them out everywhere at
        their next request; their token still signs in until it is removed from the console's tokens.
      </p>
      ${
        sessions.length === 0
          ? html`<p data-testid="sessions">No one.</p>`
          : html`<table data-testid="sessions">
                <thead>
                  <tr>
                    <th scope="col">Who</th>
                    <th scope="col">Role</th>
                    <th scope="col">Signed in</th>
                    <th scope="col">Last seen</th>
                    <th scope="col">Ends</th>
                    <th scope="col">From</th>
                  </tr>
                </thead>
                <tbody>
                  ${sessions.map(
                    (s) =>
                      html`<tr>
                        <td>${value(s.name)}</td>
                        <td>${s.role}</td>
                        <td>${time(s.createdAt, ctx)}</td>
                        <td>${time(s.lastSeenAt, ctx)}</td>
                        <td>${time(s.expiresAt, ctx)}</td>
                        <td>${s.sourceAddress ?? '—'}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
              <ul>
                ${names.map(
                  (name) =>
                    html`<li><a href="${href(['sessions', name, 'end'])}">End all sessions of ${value(name)}…</a></li>`,
                )}
              </ul>`
      }`,
  );
}
