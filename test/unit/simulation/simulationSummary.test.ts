import { describeAttemptResult, formatOffset } from '../../../src/simulation/simulationSummary';

describe('simulate output', () => {
  it('When offsets are formatted, then every one has the form +H:MM:SS', () => {
    expect([0, 2000, 1500, 62_000, 3_600_000, 72 * 3_600_000].map(formatOffset)).toEqual([
      '+0:00:00',
      '+0:00:02',
      '+0:00:02',
      '+0:01:02',
      '+1:00:00',
      '+72:00:00',
    ]);
  });

  it('When an attempt fails, then what it got is said in words', () => {
    const attempt = { attempt: 1, scheduledAtMs: 0, sentAtMs: 0, durationMs: 1 };
    expect(describeAttemptResult({ ...attempt, status: null, answer: 'ECONNREFUSED' })).toBe(
      'connection refused (ECONNREFUSED)',
    );
    expect(describeAttemptResult({ ...attempt, status: null, answer: 'no answer within 10000 ms' })).toBe(
      'no answer within 10000 ms',
    );
    expect(describeAttemptResult({ ...attempt, status: 503, answer: 'busy' })).toBe('503 busy');
  });
});
