/**
 * What happened to a notification, in the three vocabularies the service uses, from the narrowest: what the
 * status rules made of a new status, what a recorded delivery was, and every way a request to the public port
 * ends. Each is a different question; their names say which.
 */

/**
 * What the status rules (src/recording/statusRules.ts) made of a status seen for the first time: the
 * projection moved to it (applied), it would have moved backwards and was ignored (stale), or it contradicts
 * a final status (conflict). Stored with the notification (notifications.outcome).
 */
export const STATUS_TRANSITIONS = ['applied', 'stale', 'conflict'] as const;
export type StatusTransition = (typeof STATUS_TRANSITIONS)[number];

/**
 * What one verified delivery was, once recorded: a new status (accepted, stale or conflict, after its
 * transition), a repeat of a recorded one (duplicate), or an authentic body kept unread (quarantined). Stored
 * with the delivery (deliveries.outcome) and answered to the sender (`200 {"outcome": ...}`).
 */
export const DELIVERY_OUTCOMES = ['accepted', 'duplicate', 'stale', 'conflict', 'quarantined'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** The delivery outcome of a new status, by its transition. */
export const DELIVERY_OUTCOME_OF: Readonly<Record<StatusTransition, DeliveryOutcome>> = {
  applied: 'accepted',
  stale: 'stale',
  conflict: 'conflict',
};

/**
 * Who observed a status contradicting a final one: the sender's notification, reconciliation (the payment API's
 * answer), a restoration (a notification the journal gave back after a failover), or a replay: a status its
 * projection recorded before, whose history retention has since removed, so it is decided again (a sender's late
 * retry, or a captured notification sent again).
 */
export const CONFLICT_SOURCES = ['notification', 'reconciliation', 'restoration', 'replay'] as const;
export type ConflictSource = (typeof CONFLICT_SOURCES)[number];

/** A status conflict (transition conflict): what the projection keeps, what came, and who observed it. */
export interface StatusConflict {
  kind: 'order' | 'refund';
  /** The final status that came, and was recorded and ignored. */
  status: string;
  /** The final status the projection keeps. */
  keptStatus: string;
  source: ConflictSource;
}

/**
 * Every way a request to the public port ends, as counted (`notifications_total{outcome}`): a recorded
 * delivery's outcome, or the refusal that stopped it before anything was written.
 */
export const INTAKE_OUTCOMES = [
  ...DELIVERY_OUTCOMES,
  'rejected_signature',
  'rejected_pos',
  'rejected_source',
  'rejected_auth',
  'malformed',
  'too_large',
  'unsupported_media_type',
] as const;
export type IntakeOutcome = (typeof INTAKE_OUTCOMES)[number];
