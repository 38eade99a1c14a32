import { EVENT_TYPES, isEventType, type EventType } from '../../outbox/cloudEvents';
import { settingEntries } from '../../parsing/settingList';

/**
 * EXPECTED_UNROUTED_EVENT_TYPES (pure): the event types no team is meant to bind. A team binds only what it needs
 * (docs/EVENTS.md), so a type nobody takes reaches no queue for good; declared here, the board counts it and stays
 * quiet about it. Exact types only, no patterns: a pattern would quietly take in a type added later, which some team
 * may then be missing.
 */
export function parseExpectedEventTypes(value: string): { value: EventType[]; problems: string[] } {
  if (value.trim() === '') return { value: [], problems: [] };
  const { entries, problems } = settingEntries(value);
  const types: EventType[] = [];
  for (const { number, text } of entries) {
    if (isEventType(text)) {
      if (!types.includes(text)) types.push(text);
    } else
      problems.push(
        `entry ${number} (${JSON.stringify(text)}) is not an event type; the types: ${EVENT_TYPES.join(', ')}`,
      );
  }
  return { value: types, problems };
}
