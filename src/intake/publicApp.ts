import express, { type Express } from 'express';
import type { Config } from '../config';
import { errorHandler, notFound, requestId, sendError } from '../http/errors';
import { requestMetrics } from '../http/requestMetrics';
import { receiveNotification, type IntakeOptions } from './receiveNotification';

/** The public port: only POST /notifications (the notifyUrl). */
export function createPublicApp(options: IntakeOptions & { trustProxy: Config['trustProxy'] }): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Which X-Forwarded-For entry is the client (proxy-addr); false: the socket peer, XFF ignored.
  app.set('trust proxy', options.trustProxy);
  app.use(requestId);
  app.use(requestMetrics(options.metrics, 'public'));

  app.post('/notifications', receiveNotification(options));
  app.all('/notifications', (_req, res) => {
    sendError(res, 405, 'method_not_allowed', 'only POST is accepted', { Allow: 'POST' });
  });

  app.use(notFound);
  app.use(errorHandler(options.logger));
  return app;
}
