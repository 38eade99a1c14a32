import type { ObservedVia } from '../database/schema';
import type { DeliveryOutcome } from '../domain/outcomes';
import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import type { HistoryPlace } from './projectionFold';
import type { SignatureHeader } from '../verification/signatureHeader';
import type { SignatureMatch } from '../verification/verifySignature';

/**
 * One delivery attempt that passed verification, or one status read from the payment API by reconciliation
 * (observedVia): then the body is the API's answer byte-exact, the signer the POS whose credentials asked,
 * and there is no source address. A restoration (after a failover, src/failover/) is a delivery read back from
 * the journal and verified again: what the sender delivered, recorded again where it was first recorded.
 */
export interface Delivery {
  observedVia: ObservedVia;
  body: Buffer;
  bodySha256: Buffer;
  /**
   * The keys that verified it, narrowed to the POS the body names (signersFor): the recorder picks the one
   * of the POS the order belongs to (signerFor), or refuses the delivery when there is none.
   */
  signers: readonly SignatureMatch[];
  sourceAddress: string | null;
  /** Svc-Processing-Time header: milliseconds the sender spent before its first attempt. */
  processingTimeMs: number | null;
  /** The OpenSvc-Signature the sender sent (the intake's deliveries): the journal keeps it to verify the body again. */
  signature?: SignatureHeader;
  /** A restoration: the id and receive time its notification was first recorded with, which it takes again. */
  restores?: HistoryPlace;
}

/** A delivery recorded: what it was, and what it did. */
export interface DeliveryKept {
  outcome: DeliveryOutcome;
  /** A repeat with the same meaning but body bytes not seen before. */
  newVariant: boolean;
  notificationId: string | null;
  quarantineId: string | null;
  /** Events written to the outbox in this transaction. */
  eventsWritten: number;
  /** For stale and conflict outcomes: the status the projection keeps. */
  currentStatus: string | null;
  /** The POS whose key vouched for it. */
  posId: string;
  /** Facts it stated otherwise than the projection keeps (field names); the projection kept its own. */
  disagreements: readonly string[];
}

/** A delivery refused: nothing of it was written. */
export interface Refused {
  outcome: 'refused';
  /** No key that verified it belongs to the POS the order is bound to. */
  reason: 'pos_mismatch';
}

export type DeliveryAnswer = DeliveryKept | Refused;

/** Why an authentic notification was quarantined: it could not be read, or (a defect) not recorded. */
export type QuarantineCause = QuarantineReason | 'unrecordable';

/** Where verified notifications go. Each call resolves only after its transaction committed. */
export interface NotificationStore {
  record(delivery: Delivery, notification: Notification): Promise<DeliveryAnswer>;
  quarantine(delivery: Delivery, reason: QuarantineCause, detail: string): Promise<DeliveryKept>;
}
