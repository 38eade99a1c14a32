import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import type { Delivery, RecordResult } from './recordNotification';

/** Where verified notifications go. Each call resolves only after its transaction committed. */
export interface NotificationStore {
  record(delivery: Delivery, notification: Notification): Promise<RecordResult>;
  quarantine(delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult>;
}
