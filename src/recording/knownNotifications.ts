import type { SignatureMatch } from '../verification/verifySignature';

/**
 * A notification record this process saw committed: its meaning, id, the digest of its first body, the
 * POS that owns its order, and its delivery rows as far as this process knows (other replicas may have
 * added some: the cap on rows per notification holds per replica).
 */
export interface KnownRecord {
  meaning: string;
  id: string;
  bodySha256: Buffer;
  ownerPosId: string;
  deliveryRows: number;
}

/** An exact repeat of a known record, and the key of its owner's POS that vouches for it. */
export interface KnownRepeat {
  record: KnownRecord;
  signer: SignatureMatch;
}

/**
 * The notifications this process knows are committed, so that an exact repeat (same meaning, same bytes
 * as the body stored first, signed with a key of the order's POS) is recognized as a duplicate without
 * asking the database: its batch only appends the delivery to the audit trail. Only facts that cannot
 * change are kept: a notification row, once committed, is never deleted (purge only clears bodies), its
 * first body's digest never changes, and neither does the POS its order belongs to. Bounded: the oldest
 * entries go first (the sender repeats recent notifications far more than old ones). Each replica has its
 * own; a miss just takes the full path.
 */
export class KnownNotifications {
  /** The digest kept as a latin1 string: a 32-byte Buffer sliced from Node's pool would pin its 8 KB slab. */
  private readonly entries = new Map<string, Omit<KnownRecord, 'bodySha256'> & { bodySha256: string }>();

  constructor(private readonly capacity: number) {}

  /** The record and signer, when this meaning is known committed with these first-body bytes and a signer owns it. */
  repeatOf(meaning: string, bodySha256: Buffer, signers: readonly SignatureMatch[]): KnownRepeat | undefined {
    const entry = this.entries.get(meaning);
    if (entry === undefined || entry.bodySha256 !== bodySha256.toString('latin1')) return undefined;
    const signer = signers.find((s) => s.posId === entry.ownerPosId);
    return signer === undefined ? undefined : { record: { ...entry, bodySha256 }, signer };
  }

  /** Call only after the transaction that wrote or read these records committed. */
  remember(records: Iterable<KnownRecord>): void {
    if (this.capacity <= 0) return;
    for (const record of records) {
      const entry = this.entries.get(record.meaning);
      if (entry !== undefined) {
        // The first record stays; only its count of delivery rows moves on.
        if (entry.id === record.id) entry.deliveryRows = Math.max(entry.deliveryRows, record.deliveryRows);
        continue;
      }
      this.entries.set(record.meaning, { ...record, bodySha256: record.bodySha256.toString('latin1') });
      if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
