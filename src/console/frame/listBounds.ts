/**
 * What the console reads that no other part does (this folder, a file per page: lists.ts, attention.ts,
 * overview.ts); what it shares with them comes from their query modules (the order's story, the quarantine, the
 * audit trail, the outbox, the schedule). Every query goes through an index and is bounded (a LIMIT, a keyset
 * cursor, a partition range); none counts over history. This file: what the pages share.
 */

/** Rows a list shows at once. */
export const PAGE_SIZE = 50;

/**
 * How long before a delivery its notification may have been first received (the partition it lives in): the
 * sender retries for 72 hours; a day more for slack. A repeat later than that is not listed.
 */
export const DELIVERY_AFTER_FIRST_MS = 4 * 86_400_000;
