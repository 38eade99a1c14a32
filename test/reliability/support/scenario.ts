import type { ConsumeMessage } from 'amqplib';
import type { RunReport, ScenarioDefinition } from '../report';
import { secrets, type LogSource } from './secrets';
import type { StoredCounts } from './store';
import { waitForEvents, type Ledger } from './traffic';

export interface ScenarioHarness {
  /** A jest test whose outcome (and duration) is recorded for the report. */
  check(name: string, body: () => Promise<void>, timeoutMs?: number): void;
  figure(key: string, value: string | number): void;
  /**
   * The last check of a scenario: no secret in any log line of the services it started (and the
   * peak RSS of those processes, for the report).
   */
  secretsCheck(sources: () => readonly LogSource[]): void;
  /** The table's figures of a sender's traffic and of what it stored. */
  trafficFigures(ledger: Ledger, stored: StoredCounts): void;
  /**
   * A check that the outbox drains and every committed event reaches the consumer: by id, the same
   * content on redelivery, each order's events in sequence order without a gap.
   */
  eventsCheck(name: string, databaseUrl: string, consumed: () => readonly ConsumeMessage[], waitMs?: number): void;
}

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export function harness(report: RunReport, scenario: ScenarioDefinition): ScenarioHarness {
  const figure = (key: string, value: string | number): void => report.figure(scenario.id, key, value);
  const check = (name: string, body: () => Promise<void>, timeoutMs = 60_000): void => {
    it(
      name,
      async () => {
        const started = Date.now();
        try {
          await body();
        } catch (error) {
          report.check(scenario.id, name, false, Date.now() - started, errorText(error));
          throw error;
        }
        report.check(scenario.id, name, true, Date.now() - started);
      },
      timeoutMs + 5_000,
    );
  };
  return {
    check,
    figure,
    trafficFigures(ledger, stored) {
      figure('requests', ledger.requests);
      figure('200s', ledger.ok);
      figure('503s', ledger.unavailable);
      figure('unanswered', ledger.unanswered);
      figure('rows', `${stored.notifications} notifications, ${stored.deliveries} deliveries`);
    },
    eventsCheck(name, databaseUrl, consumed, waitMs = 30_000) {
      check(
        name,
        async () => {
          const events = await waitForEvents(databaseUrl, consumed(), waitMs);
          figure(
            'events',
            `${events.outboxEvents} committed, ${events.distinctConsumed} consumed, ${events.redeliveries} redelivered with the same id`,
          );
          expect(events.problems).toEqual([]);
          expect(events.pending).toBe(0);
        },
        waitMs + 15_000,
      );
    },
    secretsCheck(sources) {
      check('no second key, Basic credential, signature or buyer data appears in any log line', async () => {
        const { lines, findings } = secrets.scan(sources());
        const peak = Math.max(0, ...sources().map((s) => s.peakRssMb ?? 0));
        if (!report.hasFigure(scenario.id, 'peak RSS') && peak > 0) figure('peak RSS', `${peak} MB`);
        figure('log lines scanned', lines);
        figure('secrets in logs', findings.length);
        expect(lines).toBeGreaterThan(0);
        expect(findings).toEqual([]);
      });
    },
  };
}

/** The pod's memory limit in the chart (resources.limits.memory), the bound RSS is held to. */
export const POD_LIMIT_MB = 384;

/** ms as "1.23 s" for the report. */
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** The p-th percentile (0-100) of some figures; 0 when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}
