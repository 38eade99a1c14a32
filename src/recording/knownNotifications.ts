/** A notification record this process saw committed: its meaning, id and the digest of its first body. */
export interface KnownRecord {
  meaning: string;
  id: string;
  bodySha256: Buffer;
}

/**
 * The notifications this process knows are committed, so that an exact repeat (same meaning, same
 * bytes as the body stored first) is recognized as a duplicate without asking the database: its
 * batch only appends the delivery to the audit trail. Only facts that cannot change are kept: a
 * notification row, once committed, is never deleted (purge only clears bodies), and its first
 * body's digest never changes. Bounded: the oldest entries go first (the sender repeats recent
 * notifications far more than old ones). Each replica has its own; a miss just takes the full path.
 */
export class KnownNotifications {
  private readonly entries = new Map<string, { id: string; bodySha256: string }>();

  constructor(private readonly capacity: number) {}

  /** The record id, when this meaning is known committed with exactly these first-body bytes. */
  idOf(meaning: string, bodySha256: Buffer): string | undefined {
    const entry = this.entries.get(meaning);
    return entry !== undefined && entry.bodySha256 === bodySha256.toString('latin1') ? entry.id : undefined;
  }

  /** Call only after the transaction that wrote or read these records committed. */
  remember(records: Iterable<KnownRecord>): void {
    if (this.capacity <= 0) return;
    for (const { meaning, id, bodySha256 } of records) {
      if (this.entries.has(meaning)) continue;
      this.entries.set(meaning, { id, bodySha256: bodySha256.toString('latin1') });
      if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
