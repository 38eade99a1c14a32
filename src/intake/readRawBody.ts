import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { RequestError } from '../errors';

/**
 * The body exactly as received: the signature covers these bytes and nothing else. Reading stops
 * as soon as the limit is passed (chunked bodies included), so an oversized body is never buffered.
 */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  try {
    return await getRawBody(req, { limit, length: req.headers['content-length'] ?? null });
  } catch (error) {
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') {
      // raw-body paused the stream at the limit. Read the rest and throw it away (nothing is
      // buffered) so the sender can read the 413 before the connection closes: closing a socket
      // with unread data makes the kernel send a reset, which can beat the answer to the client.
      // The request timeout bounds how long a sender may keep streaming.
      req.resume();
      throw new RequestError(413, 'body_too_large', `body exceeds ${limit} bytes`, 'too_large');
    }
    if (type === 'request.aborted')
      throw new RequestError(400, 'request_aborted', 'client aborted the request', 'malformed');
    throw new RequestError(
      400,
      'malformed_body',
      'body could not be read (length mismatch or broken encoding)',
      'malformed',
      {
        Connection: 'close',
      },
    );
  }
}
