import type { Db } from '../database/pool';
import type { PaymentApiState } from '../database/schema';

/**
 * The record of whether the payment API answers each POS's checks (payment_api_reachability, sql/014): one row a
 * POS, written only when what a check found differs from it, or to say it still holds a few minutes later.
 */

export interface Reachability {
  posId: string;
  state: PaymentApiState;
  /** The first check that found it in this state. */
  since: Date;
  /** What failed, as a short code: timeout, network, http_503, http_429, credentials; '' when it answers. */
  detail: string;
  /** The latest check that found it so. */
  confirmedAt: Date;
}

/** How long a row may go unconfirmed while checks keep finding the same: then a check writes again. */
export const CONFIRM_EVERY_MS = 5 * 60_000;

/**
 * Writes what a check found, unless the row already says so and was confirmed within CONFIRM_EVERY_MS: a change of
 * state starts `since` again, the same state keeps it.
 */
export async function recordReachability(
  db: Db,
  found: { posId: string; state: PaymentApiState; detail: string; at: Date },
): Promise<void> {
  await db
    .insertInto('payment_api_reachability')
    .values({
      pos_id: found.posId,
      state: found.state,
      entered_at: found.at,
      detail: found.detail,
      confirmed_at: found.at,
    })
    .onConflict((oc) =>
      oc
        .column('pos_id')
        .doUpdateSet((eb) => ({
          state: eb.ref('excluded.state'),
          entered_at: eb
            .case()
            .when('payment_api_reachability.state', '=', eb.ref('excluded.state'))
            .then(eb.ref('payment_api_reachability.entered_at'))
            .else(eb.ref('excluded.entered_at'))
            .end(),
          detail: eb.ref('excluded.detail'),
          confirmed_at: eb.ref('excluded.confirmed_at'),
        }))
        .where((eb) =>
          eb.or([
            eb('payment_api_reachability.state', '<>', eb.ref('excluded.state')),
            eb('payment_api_reachability.detail', '<>', eb.ref('excluded.detail')),
            eb('payment_api_reachability.confirmed_at', '<', new Date(found.at.getTime() - CONFIRM_EVERY_MS)),
          ]),
        ),
    )
    .execute();
}

/** Every POS's record, by POS: a row per POS configured, at most. */
export async function readReachability(db: Db): Promise<Reachability[]> {
  const rows = await db.selectFrom('payment_api_reachability').selectAll().orderBy('pos_id').limit(1000).execute();
  return rows.map((r) => ({
    posId: r.pos_id,
    state: r.state,
    since: r.entered_at,
    detail: r.detail,
    confirmedAt: r.confirmed_at,
  }));
}
