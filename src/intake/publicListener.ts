import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { answerError, sendError } from '../http/jsonAnswers';
import { beginRequest } from '../http/requestContext';
import { notificationReceiver, type IntakeOptions } from './receiveNotification';

/** `/notifications`, as Express would match it: any case, an optional trailing slash, any query string. */
const NOTIFICATIONS = /^\/notifications\/?(?:\?.*)?$/i;
const ROUTE = '/notifications';

/**
 * The public port: POST /notifications (the notifyUrl) and nothing else, as a plain Node listener. No
 * framework: one route needs no router, and Express's application re-parented every request and response
 * onto its own prototypes, which cost more per request than the signature check and the body read
 * together (docs/decisions/).
 */
export function createPublicListener(options: IntakeOptions): RequestListener {
  const receive = notificationReceiver(options);
  const { metrics, logger } = options;
  return (req: IncomingMessage, res: ServerResponse) => {
    const matched = NOTIFICATIONS.test(req.url ?? '');
    const requestId = beginRequest(req, res, metrics, 'public', () => (matched ? ROUTE : 'unmatched'));
    if (!matched) return sendError(res, 404, 'not_found', 'no such route');
    if (req.method !== 'POST') {
      return sendError(res, 405, 'method_not_allowed', 'only POST is accepted', { Allow: 'POST' });
    }
    receive(req, res, requestId).catch((error: unknown) =>
      answerError(error, res, logger, { requestId, method: req.method }),
    );
  };
}
