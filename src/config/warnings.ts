import { redundantEntries } from '../intake/sourceAddress';
import type { PaymentApiCredential } from '../paymentApi/credentials';
import { KEPT_ORDER_HEAP_BYTES } from '../recording/keptOrders';
import { KNOWN_NOTIFICATION_HEAP_BYTES } from '../recording/knownNotifications';
import { isPublicSandboxKey, PUBLIC_SANDBOX_KEY, type SecondKey } from '../verification/secondKeys';
import { adminDoors, writeLanes } from './runtime';
import { RETIRED_SETTINGS, type Config } from './settingsSchema';

/** The shortest second key taken without a doubt; the payment service's are 32 hex digits. */
const MIN_SECOND_KEY_LENGTH = 16;

/** The payment service's POS ids are digits; anything else never matches a notification's merchantPosId. */
const isPosId = (id: string): boolean => /^\d{1,32}$/.test(id);

const NOT_A_POS_ID =
  "the POS id is not a number (the payment service's POS ids are digits; a key or secret may be in its place)";

/**
 * Entries that work as written but are most likely mistakes, named by entry, never by value: a POS id that
 * is not a number, a second key too short not to be guessed. Warned about at start; refused in production,
 * where no test vector is meant and the POS id would be logged.
 */
export function doubtfulKeys(keys: readonly SecondKey[], credentials: readonly PaymentApiCredential[]): string[] {
  // In a valid configuration each entry was read, so the index is the entry's number.
  return [
    ...keys.flatMap((key, i) => [
      ...(isPosId(key.posId) ? [] : [`SECOND_KEYS: entry ${i + 1}: ${NOT_A_POS_ID}`]),
      ...(key.key.length >= MIN_SECOND_KEY_LENGTH
        ? []
        : [
            `SECOND_KEYS: entry ${i + 1}: the key is shorter than ${MIN_SECOND_KEY_LENGTH} characters, so anyone ` +
              "could guess it (the payment service's second keys are 32 hex digits)",
          ]),
    ]),
    ...credentials.flatMap((c, i) =>
      isPosId(c.posId) ? [] : [`PAYMENT_API_CREDENTIALS: entry ${i + 1}: ${NOT_A_POS_ID}`],
    ),
  ];
}

/**
 * What a valid configuration may still get wrong, said at start (warn): settings that let anyone in, or
 * that do not take effect as written. Never a secret.
 */
export function configurationWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (writeLanes(config) < config.databaseWriteLanes)
    warnings.push(
      `DATABASE_WRITE_LANES=${config.databaseWriteLanes} is more than DATABASE_POOL_MAX - 1 allows: ` +
        `${writeLanes(config)} lane(s) run; raise DATABASE_POOL_MAX or lower DATABASE_WRITE_LANES`,
    );
  if (config.sourceAllowlist.any) warnings.push('ALLOWED_SOURCE_IPS=any: the source address check is disabled');
  if ((config.sourceAllowlist.production || config.sourceAllowlist.any) && config.secondKeys.some(isPublicSandboxKey)) {
    warnings.push(
      `SECOND_KEYS holds the public sandbox key of POS ${PUBLIC_SANDBOX_KEY.posId} (published in the payment ` +
        "service's documentation) while production senders are allowed: anyone can sign with it; remove it",
    );
  }
  const doors = adminDoors(config);
  if (doors.dataRoutes === 'closed')
    warnings.push(
      `ADMIN_TOKEN is not set and HOST=${config.host} is not loopback: the admin port's data routes (/orders, ` +
        `/refunds, reconcile${doors.events === 'closed' ? ', /events' : ''}) answer 401 to everyone rather than serve ` +
        'whoever reaches them; set ADMIN_TOKEN, or HOST=127.0.0.1 (probes and /metrics are open either way)',
    );
  if (doors.console === 'closed')
    warnings.push(
      `no console token is set and HOST=${config.host} is not loopback: the console answers 403; set ` +
        'CONSOLE_OPERATOR_TOKENS or CONSOLE_VIEWER_TOKENS (or ADMIN_TOKEN), or HOST=127.0.0.1',
    );
  for (const redundant of redundantEntries(config.sourceAllowlist.entries))
    warnings.push(`ALLOWED_SOURCE_IPS: ${redundant}: remove it, or correct it if another address was meant`);
  // Production refused these at load.
  warnings.push(...doubtfulKeys(config.secondKeys, config.reconciliation?.credentials ?? []));
  (config.reconciliation?.credentials ?? []).forEach(({ clientSecret }, i) => {
    if (clientSecret.includes(':'))
      warnings.push(
        `PAYMENT_API_CREDENTIALS: entry ${i + 1} has more than three ':'-separated fields: everything after the ` +
          'second is taken as the client secret; remove a field added by mistake',
      );
  });
  if (config.unusedSettings.length > 0)
    warnings.push(
      `${config.unusedSettings.join(', ')} ${config.unusedSettings.length === 1 ? 'is' : 'are'} set but ` +
        'PAYMENT_API_URL is not: reconciliation is off and they take no effect; set PAYMENT_API_URL to turn it on',
    );
  for (const name of config.retiredSettings)
    warnings.push(`${name} is set but no longer read: ${RETIRED_SETTINGS[name] ?? 'it has no effect'}; remove it`);
  if (
    config.production &&
    config.journalRetentionMs !== null &&
    config.journalAmqpUrl === null &&
    config.amqpUrl !== null
  )
    warnings.push(
      "JOURNAL_AMQP_URL is not set: the journal of recorded notifications, which holds their bodies (the buyer's " +
        "personal data), shares AMQP_URL's vhost with the events, where the downstream teams' users may read; give " +
        'it a vhost of its own that only the service may read (docs/DEPLOYMENT.md, "The database: replication and failover")',
    );
  if (config.trustProxy.kind === 'hops') {
    warnings.push(
      `TRUST_PROXY=${config.trustProxy.hops} believes X-Forwarded-For from whichever peer connects: any client ` +
        "that reaches the port directly can choose its source address; list the proxies' addresses instead",
    );
  }
  return warnings;
}

/** The share of the heap the recorder's kept state may take once full; the rest serves the requests. */
const KEPT_STATE_HEAP_SHARE = 0.5;

const megabytes = (bytes: number): string => `${Math.round(bytes / 1_048_576)} MB`;

/**
 * The recorder's kept state once full (RECORDER_KNOWN_NOTIFICATIONS and RECORDER_KEPT_ORDERS, at the heap each entry
 * was measured to take), against the heap the process may use (V8's heap_size_limit, from NODE_OPTIONS'
 * --max-old-space-size or the machine, or the container's memory limit where less): a warning when it is more than
 * half of it, since a busy shop fills both within hours and the process would then run out of memory. Null when it
 * fits.
 */
export function keptStateWarning(
  config: Pick<Config, 'recorderKnownNotifications' | 'recorderKeptOrders'>,
  heapSizeLimitBytes: number,
  /** process.constrainedMemory(): the container's memory limit; 0 where there is none. */
  givenBytes: number,
): string | null {
  const heapLimitBytes = givenBytes > 0 ? Math.min(heapSizeLimitBytes, givenBytes) : heapSizeLimitBytes;
  const known = config.recorderKnownNotifications * KNOWN_NOTIFICATION_HEAP_BYTES;
  const kept = config.recorderKeptOrders * KEPT_ORDER_HEAP_BYTES;
  if (known + kept <= KEPT_STATE_HEAP_SHARE * heapLimitBytes) return null;
  return (
    `RECORDER_KNOWN_NOTIFICATIONS=${config.recorderKnownNotifications} and ` +
    `RECORDER_KEPT_ORDERS=${config.recorderKeptOrders} keep up to ${megabytes(known + kept)} of heap once full ` +
    `(${megabytes(known)} and ${megabytes(kept)}), more than half of the ${megabytes(heapLimitBytes)} this process ` +
    'may use: lower them, or give the process more memory (the chart: resources.limits.memory, heapLimitMb)'
  );
}
