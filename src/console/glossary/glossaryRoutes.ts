import type { Router } from 'express';
import type { Access } from '../frame/access';
import { isRefusal, send, type PageFrame } from '../frame/consoleRouting';
import type { Viewer } from '../frame/layout';
import { glossaryPage } from './glossaryView';

/** The glossary: every word the console uses, in a support agent's words. */
export function glossaryRoutes(router: Router, access: Access, { context }: Pick<PageFrame, 'context'>): void {
  router.get('/glossary', async (req, res) => {
    // Words only, no data: readable before signing in too (the sign-in page links it).
    let viewer: Viewer | null = null;
    try {
      viewer = await access.viewerOf(req, res);
    } catch (error) {
      if (!isRefusal(error)) throw error;
    }
    send(res, 200, glossaryPage(context(req, viewer)));
  });
}
