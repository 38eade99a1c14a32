import type { Router } from 'express';
import { SharedWork } from '../../reconciliation/sharedWork';
import type { Access } from '../frame/access';
import { send, type ConsoleOptions, type PageFrame } from '../frame/consoleRouting';
import { attention, type Attention } from './attentionQueries';
import { attentionPage } from './attentionView';

/** What needs attention uses of the console's options. */
export type AttentionSettings = Pick<
  ConsoleOptions,
  'db' | 'limited' | 'quietAfterMs' | 'confirmWithinMs' | 'reconciliation' | 'expectedUnroutedTypes'
> &
  Pick<PageFrame, 'now' | 'context'>;

/** Needs attention: the status board, one condition a line, and the lists behind it. */
export function attentionRoutes(router: Router, access: Access, settings: AttentionSettings): void {
  const { db, limited, now, context } = settings;
  // The board is a page a team leaves open and reloads: loads that arrive while one read is under way share it
  // (16 queries), so 32 people reloading cost the database one read, not 32.
  const boardReads = new SharedWork<Attention>();

  router.get('/attention', async (req, res) => {
    const { viewer, data } = await access.readFor(req, res, 'viewer', () =>
      limited(res, (clientLeft) =>
        boardReads.run('board', () => attention(db, now(), settings.expectedUnroutedTypes), clientLeft),
      ),
    );
    send(
      res,
      200,
      attentionPage(context(req, viewer), data, {
        canAct: viewer.role === 'operator',
        quietAfterMs: settings.quietAfterMs,
        confirmWithinMs: settings.confirmWithinMs,
        checksOn: settings.reconciliation !== null,
      }),
    );
  });
}
