/**
 * Work asked for by several callers at once, done once (single flight): callers with the same key share the
 * one under way and its result. Each caller may leave (its signal aborts); the work is cancelled (its own
 * signal aborts) once every caller has left, and still settles, so whoever waits on it is never stuck.
 */
export class SharedWork<T> {
  private readonly running = new Map<string, { result: Promise<T>; cancel: AbortController; callers: number }>();

  /** How many distinct pieces of work are under way. */
  get size(): number {
    return this.running.size;
  }

  run(key: string, work: (cancelled: AbortSignal) => Promise<T>, callerLeft?: AbortSignal): Promise<T> {
    let entry = this.running.get(key);
    if (!entry) {
      const cancel = new AbortController();
      const result = work(cancel.signal).finally(() => this.running.delete(key));
      entry = { result, cancel, callers: 0 };
      this.running.set(key, entry);
    }
    const shared = entry;
    shared.callers += 1;
    const leave = (): void => {
      shared.callers -= 1;
      if (shared.callers === 0) shared.cancel.abort();
    };
    if (callerLeft?.aborted) leave();
    else callerLeft?.addEventListener('abort', leave, { once: true });
    return shared.result.finally(() => callerLeft?.removeEventListener('abort', leave));
  }
}
