import type { Notification } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import type { Db } from './database';
import { recordNotification, recordQuarantine, type Delivery, type RecordingContext, type RecordResult } from './recordNotification';

/** Where verified notifications go. Each call resolves only after its transaction committed. */
export interface NotificationStore {
  record(delivery: Delivery, notification: Notification): Promise<RecordResult>;
  quarantine(delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult>;
}

/** One transaction per notification. */
export function createNotificationStore(db: Db, context: RecordingContext): NotificationStore {
  return {
    record: (delivery, notification) => recordNotification(db, context, delivery, notification),
    quarantine: (delivery, reason, detail) => recordQuarantine(db, delivery, reason, detail),
  };
}
