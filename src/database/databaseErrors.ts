/** Errors that say the connection itself is unusable, so the client must not go back to the pool. */
export function breaksConnection(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P') || code.startsWith('E')))
    return true;
  return /Connection terminated|Query read timeout|timeout|ECONN|EPIPE|socket/i.test(error.message);
}

/**
 * Whether a write failed because its day of history has no partition (SQLSTATE 23514, raised by the routing
 * of a partitioned table): the days are made at once (src/partitions/partitionMaintainer.ts), and the sender's retry lands.
 */
export function isMissingPartition(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === '23514' &&
    error.message.startsWith('no partition of relation')
  );
}

/**
 * Whether an error means "the database cannot take the write right now" (answer 503 and let the
 * sender retry) rather than a defect. Data, constraint and syntax errors are defects, but for a day of
 * history without its partition: the write that found it missing has it made (isMissingPartition).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (isMissingPartition(error)) return true;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    return !['22', '23', '42', '2B', '0A', 'XX'].includes(code.slice(0, 2));
  }
  if (typeof code === 'string' && code.startsWith('E')) return true; // ECONNREFUSED, ETIMEDOUT, ...
  return /Connection terminated|timeout|connection error|Connection refused|pool after calling end/i.test(
    error.message,
  );
}
