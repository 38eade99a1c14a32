/** Reading a payment-API answer, bounded in size: the client holds no more than this of any answer. */

/**
 * The largest answer read (declared by Content-Length or counted as it arrives); past it the connection is
 * dropped and the answer is invalid. The largest the spec's answers get (an order, a refund list) is a few KiB.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** The answer's bytes, or null when it declares or sends more than `limit` (the caller then drops it). */
export async function readAnswer(response: Response, limit: number): Promise<Buffer | null> {
  const declared = response.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return null;
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = response.body?.getReader();
  for (let read = await reader?.read(); read && !read.done; read = await reader?.read()) {
    total += read.value.byteLength;
    if (total > limit) {
      void reader?.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks, total);
}
