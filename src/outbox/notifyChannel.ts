/** LISTEN/NOTIFY channel on which the recorder hints the relay that events were committed. */
export const OUTBOX_CHANNEL = 'outbox_events';
