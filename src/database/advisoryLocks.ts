/**
 * Every Postgres advisory lock key the service takes, in one place, so that a new one never takes another's: a key
 * taken twice makes two jobs wait on each other (issue 54 found the failover recovery's first key to be the one
 * sql/008 takes in SQL). The order locks of a recording transaction are 64-bit hashes of the order ids
 * (ORDER_LOCK_SEED in src/recording/batchQueries.ts), far from these.
 */
export const ADVISORY_LOCKS = {
  /** Migrations, one runner at a time (src/database/migrations.ts). */
  migrations: 7_316_001,
  /** The one active outbox relay (src/outbox/outboxRelay.ts). */
  relay: 7_316_002,
  /** The one active reconciler (src/reconciliation/reconciler.ts). */
  reconciler: 7_316_003,
  /** The one active history maintainer (src/partitions/partitionMaintainer.ts). */
  historyMaintainer: 7_316_004,
  /** History work across replicas and the command line (src/partitions/partitionQueries.ts). */
  historyWork: 7_316_005,
  /** Every maker of days of history, taken in SQL by history_partitions_ensure (sql/008). */
  dayMakers: 7_316_006,
  /** The one active failover recovery (src/failover/failoverRecovery.ts). */
  failoverRecovery: 7_316_007,
} as const;
