import type { Router } from 'express';
import { readOrderStory } from '../../orderStory/orderStoryQueries';
import type { Access } from '../frame/access';
import {
  orderIdOf,
  refusal,
  seesPersonalData,
  send,
  type ConsoleOptions,
  type PageFrame,
} from '../frame/consoleRouting';
import { orderPage } from './orderView';

/** What the order page uses of the console's options. */
export type OrderSettings = Pick<
  ConsoleOptions,
  'db' | 'limited' | 'viewersSeePersonalData' | 'checkSchedule' | 'confirmWithinMs'
> &
  Pick<PageFrame, 'context'>;

/** One order's page: its whole story, read by `readOrderStory` (src/orderStory/). Its actions: orderActionRoutes.ts. */
export function orderRoutes(router: Router, access: Access, settings: OrderSettings): void {
  const { db, limited, context } = settings;

  router.get('/orders/:orderId', async (req, res) => {
    const { viewer, data: story } = await access.readFor(req, res, 'viewer', async () => {
      const orderId = orderIdOf(req);
      const found = await limited(res, () => readOrderStory(db, orderId));
      if (found === null)
        throw refusal(404, 'order_not_found', 'Not found', `No order or refund has the id “${orderId}”.`);
      return found;
    });
    send(
      res,
      200,
      orderPage(context(req, viewer), story, {
        personalData: seesPersonalData(viewer, settings.viewersSeePersonalData),
        canAct: viewer.role === 'operator',
        checks: settings.checkSchedule,
        confirmWithinMs: settings.confirmWithinMs,
      }),
    );
  });
}
