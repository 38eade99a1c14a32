import { rowColumns, type JsonRow } from '../database/jsonRows';
import type { OutboxEventsTable } from '../database/schema';
import type { DomainEvent } from './cloudEvents';

/** The outbox's rows as the recording transaction writes them (outboxQueries.ts: insertOutboxRows). */

/**
 * An outbox row. The message travels as the event's JSON object: read into the text column, it keeps its
 * text exactly, so the column holds the event as published.
 */
export type OutboxRow = JsonRow<OutboxEventsTable, 'id' | 'order_id' | 'sequence' | 'type'> & {
  message: DomainEvent;
};
export const OUTBOX_COLUMNS = rowColumns<OutboxRow>({
  id: true,
  order_id: true,
  sequence: true,
  type: true,
  message: true,
});

/** An event's row: the event itself is its message. */
export const outboxRow = (event: DomainEvent): OutboxRow => ({
  id: event.id,
  order_id: event.subject,
  sequence: event.data.sequence,
  type: event.type,
  message: event,
});
