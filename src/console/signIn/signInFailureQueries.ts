import type { Db } from '../../database/pool';

/**
 * Failed sign-ins by source and minute (sql/012), shared by every replica: read before a token is checked,
 * added to after a failure. Rows of minutes past are deleted as new failures come (a few rows at any time).
 */

/** Minutes of failures kept: the current one is all the throttle reads; a few more for a look by hand. */
const KEPT_MINUTES = 10;

/** This minute's failures of one source and of every source. */
export async function failuresThisMinute(
  db: Db,
  minute: Date,
  source: string,
): Promise<{ source: number; total: number }> {
  const row = await db
    .selectFrom('console_sign_in_failures')
    .select((eb) => [
      eb.fn.coalesce(eb.fn.sum<string>('failures').filterWhere('source', '=', source), eb.lit(0)).as('source'),
      eb.fn.coalesce(eb.fn.sum<string>('failures'), eb.lit(0)).as('total'),
    ])
    .where('minute', '=', minute)
    .executeTakeFirst();
  return { source: Number(row?.source ?? 0), total: Number(row?.total ?? 0) };
}

/** Counts one failed sign-in of a source in its minute. */
export async function addFailure(db: Db, minute: Date, source: string): Promise<void> {
  await db
    .deleteFrom('console_sign_in_failures')
    .where('minute', '<', new Date(minute.getTime() - KEPT_MINUTES * 60_000))
    .execute();
  await db
    .insertInto('console_sign_in_failures')
    .values({ minute, source, failures: 1 })
    .onConflict((oc) =>
      oc
        .columns(['minute', 'source'])
        .doUpdateSet((eb) => ({ failures: eb('console_sign_in_failures.failures', '+', 1) })),
    )
    .execute();
}
