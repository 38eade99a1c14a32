import { createHash } from 'node:crypto';
import { fingerprintKey } from '../../src/verification/secondKeys';
import { query } from './database';
import { POS_ID, SECOND_KEY } from './signing';

export const sha256 = (body: string): Buffer => createHash('sha256').update(body).digest();

/** A quarantine row as an older version of the receiver, whose parser rejected the body, left it. */
export async function quarantineAsOlderVersion(
  databaseUrl: string,
  body: string,
  posId = POS_ID,
  sourceAddress = '185.68.12.10',
): Promise<string> {
  const [row] = await query<{ id: string }>(
    databaseUrl,
    `INSERT INTO quarantined_notifications (reason, detail, pos_id, key_fingerprint, body, body_sha256, received_at)
     VALUES ('invalid_field', 'order.totalAmount must be a whole number of minor units', $1, $2, $3, $4, now() - interval '1 hour')
     RETURNING id`,
    [posId, fingerprintKey(SECOND_KEY), Buffer.from(body), sha256(body)],
  );
  const id = (row as { id: string }).id;
  await query(
    databaseUrl,
    `INSERT INTO deliveries (received_at, source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome, quarantine_id,
                             notification_received_at)
     SELECT now() - interval '1 hour', $5, 321, $1, $2, $3, 'quarantined', $4, received_at
       FROM quarantined_notifications WHERE id = $4`,
    [posId, fingerprintKey(SECOND_KEY), sha256(body), id, sourceAddress],
  );
  return id;
}
