import type { ObservedVia } from '../database/schema';
import { buildEvent, type DomainEvent } from '../outbox/cloudEvents';
import { readStoredNotification } from '../parsing/parseNotification';
import { ProjectionFold, statusEvent, type RecordingContext } from './projectionFold';

/**
 * An order's events rebuilt from its history (`events rebuild`), pure: its notifications, in the order they were
 * recorded, folded by the recorder's own fold into the events the recorder published, each numbered in the order's
 * stream, with its time (the notification's receipt) and its id (derived from both; or, for an event written
 * before ids were derived, the id and time kept for it in legacy_event_ids, sql/011). The same events, byte for
 * byte, as the recorder wrote, as long as the order's whole history is kept: an order some of whose history
 * HISTORY_RETENTION removed numbers differently, and is not rebuilt.
 */

/** A notification of the order's stream (the order's own and its refunds'), as history keeps it. */
export interface StreamEntry {
  id: string;
  parsed: unknown;
  pos_id: string;
  /** Its receipt time as text (to_json of received_at: microseconds kept). */
  at: string;
  observed_via: ObservedVia;
}

/** An event written before ids were derived: its id and time, and its place in the feed (created_at). */
export interface LegacyEvent {
  id: string;
  time: Date;
  createdAt: Date;
}

export interface RebuildContext extends RecordingContext {
  /** The POS the order belongs to (order_owners). */
  ownerPosId: string | null;
  /** The order's last event number as the recorder left it (event_streams): all its history must add up to it. */
  lastSequence: number;
  legacy: ReadonlyMap<string, LegacyEvent>;
  /** The first notification whose event id is derived (event_id_derivation). */
  derivedFrom: number;
  /** The numbers of the order's events the outbox still holds. */
  kept: ReadonlySet<number>;
  /** The events asked for: those of notifications received in the range. */
  wanted(entry: StreamEntry): boolean;
}

export interface RebuiltEvent {
  event: DomainEvent;
  /** Its place in the feed: when its notification was recorded (or the legacy event's own). */
  createdAt: string;
}

export type OrderRebuild =
  | { outcome: 'rebuilt'; events: RebuiltEvent[]; lost: string[] }
  /** Part of its history is gone (HISTORY_RETENTION), or something else changed its numbering. */
  | { outcome: 'incomplete'; found: number; expected: number }
  | { outcome: 'unreadable'; notificationIds: string[] };

export function rebuildOrderEvents(stream: readonly StreamEntry[], context: RebuildContext): OrderRebuild {
  const fold = new ProjectionFold();
  const unreadable: string[] = [];
  const events: RebuiltEvent[] = [];
  const lost: string[] = [];
  let sequence = 0;
  for (const entry of stream) {
    const n = readStoredNotification(entry.parsed);
    if (!n) {
      unreadable.push(entry.id);
      continue;
    }
    const owner = context.ownerPosId ?? (n.kind === 'order' ? n.merchantPosId : null) ?? entry.pos_id;
    const folded = fold.fold(n, owner, { id: entry.id, at: entry.at });
    const event = statusEvent(context, n, folded, entry.observed_via, new Date(entry.at), () => ++sequence);
    if (!event || !context.wanted(entry)) continue;
    const legacy = context.legacy.get(entry.id);
    if (legacy)
      events.push({
        event: buildEvent(context.eventSource, event.type, event.data, legacy.time, legacy.id),
        createdAt: legacy.createdAt.toISOString(),
      });
    else if (Number(entry.id) < context.derivedFrom) {
      if (!context.kept.has(event.data.sequence)) lost.push(entry.id);
    } else events.push({ event, createdAt: entry.at });
  }
  if (unreadable.length > 0) return { outcome: 'unreadable', notificationIds: unreadable };
  if (sequence !== context.lastSequence)
    return { outcome: 'incomplete', found: sequence, expected: context.lastSequence };
  return { outcome: 'rebuilt', events, lost };
}
