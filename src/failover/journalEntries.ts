import { z } from 'zod';
import type { BatchDecision } from '../recording/batch';
import type { Delivery } from '../recording/notificationStore';
import type { SignatureAlgorithm } from '../verification/signatureHeader';

/**
 * What the journal of recorded notifications holds (docs/decisions/0021), as data: pure. An entry is what the
 * sender delivered (the exact body, its signature, where it came from) and where the service first recorded it, so
 * that after a failover the body is verified again with SECOND_KEYS and recorded again through the recorder, in the
 * place it had: the same notification id and receive time, and so the same event id.
 *
 * A message carries the entries one recording transaction (or a few, flushed together) committed, or a fence: the
 * mark a reader publishes to know where its read back ends.
 */

/** One delivery the journal keeps. */
export interface JournalEntry {
  /** A notification recorded for the first time, or an authentic body that could not be read (quarantined). */
  kind: 'notification' | 'quarantine';
  /** When it was recorded (ISO 8601; for a notification its receive time as recorded, microseconds kept). */
  at: string;
  /** The notification's id as first recorded; none for a quarantined body. */
  id: string | null;
  sourceAddress: string | null;
  processingTimeMs: number | null;
  /** The OpenSvc-Signature it came with: the algorithm, and the signature in hex. */
  algorithm: SignatureAlgorithm;
  signature: string;
  /** The exact body, base64. */
  body: string;
}

/** A message of the journal: entries, or a reader's fence. */
export type JournalMessage = { entries: JournalEntry[] } | { fence: string };

/** The version of the message format (the `journal` field); a reader sets aside a message of another one. */
export const JOURNAL_FORMAT = 1;

const ALGORITHMS = ['md5', 'sha1', 'sha256', 'sha384', 'sha512'] as const satisfies readonly SignatureAlgorithm[];

/** Every field checked: the journal's queue is the service's own, but what it reads back is never trusted blindly. */
const entrySchema = z.strictObject({
  kind: z.enum(['notification', 'quarantine']),
  at: z.iso.datetime({ offset: true, local: false }),
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,18}$/)
    .nullable(),
  sourceAddress: z.string().max(64).nullable(),
  processingTimeMs: z.number().int().min(0).nullable(),
  algorithm: z.enum(ALGORITHMS),
  signature: z.string().regex(/^[0-9a-f]{32,128}$/),
  body: z.base64(),
});

const messageSchema = z.union([
  z.strictObject({ journal: z.literal(JOURNAL_FORMAT), entries: z.array(z.unknown()).max(100_000) }),
  z.strictObject({ journal: z.literal(JOURNAL_FORMAT), fence: z.uuid() }),
]);

export const encodeMessage = (message: JournalMessage): Buffer =>
  Buffer.from(JSON.stringify({ journal: JOURNAL_FORMAT, ...message }));

/** What a message read back holds: its entries (each checked, the bad ones counted), a fence, or why it is unreadable. */
export type DecodedMessage = { entries: JournalEntry[]; unreadable: number } | { fence: string } | { problem: string };

export function decodeMessage(content: Buffer): DecodedMessage {
  let json: unknown;
  try {
    json = JSON.parse(content.toString('utf8'));
  } catch {
    return { problem: 'not JSON' };
  }
  const message = messageSchema.safeParse(json);
  if (!message.success) return { problem: 'not a journal message of this version' };
  if ('fence' in message.data) return { fence: message.data.fence };
  const entries: JournalEntry[] = [];
  let unreadable = 0;
  for (const raw of message.data.entries) {
    const entry = entrySchema.safeParse(raw);
    // A notification entry names its id; a quarantine has none.
    if (entry.success && (entry.data.id === null) === (entry.data.kind === 'quarantine')) entries.push(entry.data);
    else unreadable += 1;
  }
  return { entries, unreadable };
}

/** A delivery as the journal keeps it, recorded at `at` (as `id`, or quarantined); none without its signature. */
export function entryOf(
  delivery: Delivery,
  kind: JournalEntry['kind'],
  at: string,
  id: string | null,
): JournalEntry | null {
  if (delivery.observedVia !== 'notification' || !delivery.signature) return null;
  return {
    kind,
    at,
    id,
    sourceAddress: delivery.sourceAddress,
    processingTimeMs: delivery.processingTimeMs,
    algorithm: delivery.signature.algorithm,
    signature: delivery.signature.signature.toString('hex'),
    body: delivery.body.toString('base64'),
  };
}

/**
 * The entries of a committed batch: each notification it recorded for the first time, with the delivery that
 * brought it. Repeats are not kept again (their notification's entry is), nor what reconciliation or a restoration
 * recorded (no sender acknowledged those: reconciliation learns them again).
 */
export function entriesOf({ writes }: BatchDecision): JournalEntry[] {
  if (writes.newNotifications.length === 0) return [];
  const fresh = new Set(writes.newNotifications.map((n) => n.id));
  const entries: JournalEntry[] = [];
  for (const { delivery, notificationId, notificationReceivedAt } of writes.deliveries) {
    if (!fresh.delete(notificationId)) continue;
    const entry = entryOf(delivery, 'notification', notificationReceivedAt, notificationId);
    if (entry) entries.push(entry);
  }
  return entries;
}

/** The bytes an entry takes in a message, about: what the journal's in-memory backlog is bounded by. */
export const entryBytes = (entry: JournalEntry): number => entry.body.length + 400;
