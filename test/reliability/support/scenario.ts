import type { RunReport, ScenarioDefinition } from '../report';
import { secrets, type LogSource } from './secrets';

export interface ScenarioHarness {
  /** A jest test whose outcome (and duration) is recorded for the report. */
  check(name: string, body: () => Promise<void>, timeoutMs?: number): void;
  figure(key: string, value: string | number): void;
  /**
   * The last check of a scenario: no secret in any log line of the services it started (and the
   * peak RSS of those processes, for the report).
   */
  secretsCheck(sources: () => readonly LogSource[]): void;
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

/** ms as "1.23 s" for the report. */
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
