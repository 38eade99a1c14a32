import { sql, type RawBuilder } from 'kysely';
import { MAX_DOUBLINGS, type BackoffPolicy } from '../domain/backoff';

/**
 * backoffMs (src/domain/backoff.ts) as SQL, built from the same policy, for waits computed in a statement (the
 * relay marks a whole batch's failed events in one UPDATE): the wait in milliseconds before retry `retry` (1 for
 * the first), firstMs × 2^(retry-1) at most maxMs, and with `full` jitter a uniform draw below it.
 * test/integration/database/backoffSql.test.ts compares the two.
 */
export function backoffMsSql(policy: BackoffPolicy, retry: RawBuilder<unknown>): RawBuilder<number> {
  const ceiling = sql<number>`least(
    ${policy.firstMs}::float8 * power(2, least(greatest(${retry} - 1, 0), ${MAX_DOUBLINGS})), ${policy.maxMs}::float8)`;
  return policy.jitter === 'full' ? sql<number>`floor(random() * ${ceiling})` : ceiling;
}
