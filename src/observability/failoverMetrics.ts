import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The metrics of the failover watch, its recovery and the journal of recorded notifications (src/failover/), in
 * the service's registry.
 */

export const FAILOVER_CAUSES = ['timeline', 'server', 'beat'] as const;
export const RECOVERY_PHASES = ['restoring', 'reconciling'] as const;
/** What came of an entry read back from the journal after a failover. */
export const RESTORATION_OUTCOMES = ['restored', 'already_recorded', 'set_aside'] as const;
export type RestorationOutcome = (typeof RESTORATION_OUTCOMES)[number];
/** What came of an entry given to the journal: the broker confirmed it, or it was dropped (the backlog was full). */
export const JOURNAL_OUTCOMES = ['confirmed', 'dropped'] as const;

export interface FailoverMetrics {
  /** Failovers this replica noticed, by cause: the timeline or the server changed, or the beat went back. */
  noticed: Counter<'cause'>;
  /** 1 while a failover's recovery is in this phase, as the database says (every replica reports it). */
  recovery: Gauge<'phase'>;
  /** Journal entries the active recovery read back, by what came of them. */
  restorations: Counter<'outcome'>;
  /** When this replica's watch last moved the database's beat (Unix seconds): it stops moving while writes fail. */
  lastBeat: Gauge;
  journalEntries: Counter<'outcome'>;
  /** Entries given to the journal and not confirmed by the broker yet (bounded: past the bound the oldest drop). */
  journalBacklog: Gauge;
  journalUp: Gauge;
}

export function createFailoverMetrics(registry: Registry): FailoverMetrics {
  const noticed = new Counter({
    name: 'database_failovers_total',
    help: 'Database failovers this replica noticed, by cause: timeline (a standby promoted), server (another database server) or beat (the database lost writes it had acknowledged).',
    labelNames: ['cause'] as const,
    registers: [registry],
  });
  for (const cause of FAILOVER_CAUSES) noticed.inc({ cause }, 0);
  const recovery = new Gauge({
    name: 'database_failover_recovery',
    help: "1 while a failover's recovery is in this phase: restoring (from the journal; writes are held) or reconciling (the orders of the window before it, against the payment API).",
    labelNames: ['phase'] as const,
    registers: [registry],
  });
  for (const phase of RECOVERY_PHASES) recovery.set({ phase }, 0);
  const restorations = new Counter({
    name: 'database_failover_restorations_total',
    help: 'Journal entries read back after a failover, by outcome: restored, already_recorded (the promoted database had it), set_aside (failed verification; never recorded).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of RESTORATION_OUTCOMES) restorations.inc({ outcome }, 0);
  const journalEntries = new Counter({
    name: 'notification_journal_entries_total',
    help: 'Recorded notifications given to the journal, by outcome: confirmed by the broker, or dropped (its backlog was full while the broker was away).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of JOURNAL_OUTCOMES) journalEntries.inc({ outcome }, 0);
  return {
    noticed,
    recovery,
    restorations,
    lastBeat: new Gauge({
      name: 'database_watch_last_beat_timestamp_seconds',
      help: "When this replica's failover watch last moved the database's beat (Unix seconds); it stands still while writes fail.",
      registers: [registry],
    }),
    journalEntries,
    journalBacklog: new Gauge({
      name: 'notification_journal_backlog_entries',
      help: 'Recorded notifications given to the journal and not yet confirmed by the broker.',
      registers: [registry],
    }),
    journalUp: new Gauge({
      name: 'notification_journal_up',
      help: "1 while this replica's journal holds an open broker connection.",
      registers: [registry],
    }),
  };
}
