import { createHash } from 'node:crypto';
import type { RestorationOutcome } from '../observability/failoverMetrics';
import { parseNotification } from '../parsing/parseNotification';
import type { Delivery, NotificationStore } from '../recording/notificationStore';
import { signersFor } from '../verification/posBinding';
import type { SecondKey } from '../verification/secondKeys';
import { verifySignature } from '../verification/verifySignature';
import type { JournalEntry } from './journalEntries';

/**
 * One journal entry recorded again after a failover, through the same door as a delivery from the sender: its body
 * verified again with SECOND_KEYS (an entry that fails is set aside: counted, never recorded), then parsed and
 * recorded (or quarantined) by a recorder of its own, with `observedVia: restoration`. What the database still had
 * is a duplicate, as any repeat; a status it lost is applied by the same rules as a delivery (post-COMPLETED noise
 * ignored, conflicts counted) and publishes its event once more, under the id it had: the notification takes its
 * first id and receive time again (`keepPlace`), unless the promoted database gave that id to another one.
 */

/** What became of an entry, and why when it was set aside (no value of it: a reason for the log). */
export type Restoration = { outcome: Exclude<RestorationOutcome, 'set_aside'> } | { outcome: 'set_aside'; why: string };

/** The entry as a delivery, or why it is set aside. */
export function deliveryOf(
  entry: JournalEntry,
  keys: readonly SecondKey[],
  keepPlace: boolean,
): { delivery: Delivery; parsed: ReturnType<typeof parseNotification> } | { why: string } {
  const body = Buffer.from(entry.body, 'base64');
  const signature = { algorithm: entry.algorithm, signature: Buffer.from(entry.signature, 'hex') };
  const { matches } = verifySignature(signature, body, keys);
  if (matches.length === 0) return { why: 'its signature matches no key of SECOND_KEYS' };
  const parsed = parseNotification(body);
  const signers = signersFor(
    matches,
    parsed.ok && parsed.notification.kind === 'order' ? parsed.notification.merchantPosId : null,
  );
  if (signers.length === 0) return { why: "its signature's key belongs to another POS than the order's" };
  return {
    parsed,
    delivery: {
      observedVia: 'restoration',
      body,
      bodySha256: createHash('sha256').update(body).digest(),
      signers,
      sourceAddress: entry.sourceAddress,
      processingTimeMs: entry.processingTimeMs,
      ...(keepPlace && entry.id !== null ? { restores: { id: entry.id, at: entry.at } } : {}),
    },
  };
}

export async function restoreEntry(
  store: NotificationStore,
  entry: JournalEntry,
  keys: readonly SecondKey[],
  keepPlace: boolean,
): Promise<Restoration> {
  const made = deliveryOf(entry, keys, keepPlace);
  if ('why' in made) return { outcome: 'set_aside', why: made.why };
  const { delivery, parsed } = made;
  const kept = parsed.ok
    ? await store.record(delivery, parsed.notification)
    : await store.quarantine(delivery, parsed.reason, parsed.detail);
  if (kept.outcome === 'refused') return { outcome: 'set_aside', why: 'its POS is not the one its order belongs to' };
  return { outcome: kept.outcome === 'duplicate' ? 'already_recorded' : 'restored' };
}
