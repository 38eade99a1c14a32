import { settingEntries } from '../parsing/settingList';

/** A POS's OAuth client credentials (spec, "Endpoints" 1). The secret never leaves this object in logs. */
export interface PaymentApiCredential {
  posId: string;
  clientId: string;
  clientSecret: string;
}

/**
 * Parses PAYMENT_API_CREDENTIALS: comma-separated `posId:clientId:clientSecret` entries, one per POS.
 * The secret is everything after the second ':'. Problems name the entry's position, never its text.
 */
export function parsePaymentApiCredentials(value: string): {
  credentials: PaymentApiCredential[];
  problems: string[];
} {
  const credentials: PaymentApiCredential[] = [];
  const { entries, problems } = settingEntries(value);
  for (const { number, text: entry } of entries) {
    const first = entry.indexOf(':');
    const second = first === -1 ? -1 : entry.indexOf(':', first + 1);
    const posId = second === -1 ? '' : entry.slice(0, first).trim();
    const clientId = second === -1 ? '' : entry.slice(first + 1, second).trim();
    const clientSecret = second === -1 ? '' : entry.slice(second + 1).trim();
    if (posId === '' || clientId === '' || clientSecret === '') {
      problems.push(`entry ${number} is not of the form posId:clientId:clientSecret`);
      continue;
    }
    // posId is not secret: naming it helps the operator find the entry.
    if (credentials.some((c) => c.posId === posId)) {
      problems.push(`entry ${number}: POS ${posId} appears more than once (one client per POS)`);
      continue;
    }
    credentials.push({ posId, clientId, clientSecret });
  }
  return { credentials, problems };
}
