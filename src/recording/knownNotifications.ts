import type { SignatureMatch } from '../verification/verifySignature';

/**
 * A notification record this process saw committed: its meaning, id, the digest of its first body, the
 * POS that owns its order, and its delivery rows as far as this process knows (other replicas may have
 * added some: the cap on rows per notification holds per replica).
 */
export interface KnownNotification {
  meaning: string;
  id: string;
  /** When the notification was received (the database's text): the cache answers for it only for a while. */
  receivedAt: string;
  bodySha256: Buffer;
  ownerPosId: string;
  deliveryRows: number;
}

/**
 * How long after its receipt a record is answered from the cache: the sender's retry window (72 h). History
 * retention is never shorter (src/config/settingsSchema.ts), so a record the cache answers for is always still stored; a repeat
 * after that takes the full path, which finds the record, or records it anew once retention removed it.
 */
export const KNOWN_FOR_MS = 72 * 3_600_000;

/**
 * The heap a known notification takes, its meaning, id and time included: 1,390 B in the memory mode (`npm run bench
 * -- --memory`, 2026-12-04), of which the cache's own entry (the digest, the Map's and the ring's slots) is 486 B.
 * The start's warning about the heap reads it (src/config/warnings.ts).
 */
export const KNOWN_NOTIFICATION_HEAP_BYTES = 1390;

/** An exact repeat of a known record, and the key of its owner's POS that vouches for it. */
export interface KnownRepeat {
  record: KnownNotification;
  signer: SignatureMatch;
}

/**
 * The notifications this process knows are committed, so that an exact repeat (same meaning, same bytes
 * as the body stored first, signed with a key of the order's POS) is recognized as a duplicate without
 * asking the database: its batch only appends the delivery to the audit trail. Only facts that cannot
 * change are kept: a notification row, once committed, stays until history retention removes its day, which
 * is never within KNOWN_FOR_MS of its receipt; its first body's digest never changes, and neither does the POS its
 * order belongs to. Bounded: the oldest
 * entries go first (the sender repeats recent notifications far more than old ones). Each replica has its
 * own; a miss just takes the full path.
 */
export class KnownNotifications {
  /** The digest kept as a latin1 string: a 32-byte Buffer sliced from Node's pool would pin its 8 KB slab. */
  private readonly entries = new Map<
    string,
    Omit<KnownNotification, 'bodySha256'> & { bodySha256: string; knownUntil: number }
  >();

  /**
   * The meanings in the order they were added, a ring of `capacity` slots whose next slot holds the oldest: evicting
   * it is O(1). Asking the Map for its first key instead (`keys().next()`) walks past every slot its deletions
   * left at the front until its next rehash: about 20-40 µs per new notification once the cache was full.
   */
  private readonly order: string[] = [];
  private oldest = 0;

  constructor(
    private readonly capacity: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * The record and signer, when this meaning is known committed with these first-body bytes and a signer owns
   * it, and was received less than KNOWN_FOR_MS ago.
   */
  repeatOf(meaning: string, bodySha256: Buffer, signers: readonly SignatureMatch[]): KnownRepeat | undefined {
    const entry = this.entries.get(meaning);
    if (entry === undefined || entry.bodySha256 !== bodySha256.toString('latin1')) return undefined;
    if (this.clock() >= entry.knownUntil) return undefined;
    const signer = signers.find((s) => s.posId === entry.ownerPosId);
    if (signer === undefined) return undefined;
    const { knownUntil: _knownUntil, ...record } = entry;
    return { record: { ...record, bodySha256 }, signer };
  }

  /** Call only after the transaction that wrote or read these records committed. */
  remember(records: Iterable<KnownNotification>): void {
    if (this.capacity <= 0) return;
    for (const record of records) {
      const entry = this.entries.get(record.meaning);
      if (entry !== undefined) {
        // The first record stays; only its count of delivery rows moves on.
        if (entry.id === record.id) entry.deliveryRows = Math.max(entry.deliveryRows, record.deliveryRows);
        continue;
      }
      this.entries.set(record.meaning, {
        ...record,
        bodySha256: record.bodySha256.toString('latin1'),
        knownUntil: Date.parse(record.receivedAt) + KNOWN_FOR_MS,
      });
      this.evictOldestFor(record.meaning);
    }
  }

  /** Adds a new meaning to the order; past the capacity, the oldest one's slot is its, and the oldest goes. */
  private evictOldestFor(meaning: string): void {
    if (this.order.length < this.capacity) {
      this.order.push(meaning);
      return;
    }
    const evicted = this.order[this.oldest] as string;
    this.order[this.oldest] = meaning;
    this.oldest = (this.oldest + 1) % this.capacity;
    this.entries.delete(evicted);
  }

  get size(): number {
    return this.entries.size;
  }
}
