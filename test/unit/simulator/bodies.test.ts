import fc from 'fast-check';
import { formatSenderTimestamp } from '../../../src/simulator/bodies';

describe('formatSenderTimestamp', () => {
  const reference = (date: Date): string => {
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'Europe/Warsaw',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    }).formatToParts(date);
    const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '';
    const ms = String(date.getUTCMilliseconds()).padStart(3, '0');
    return `${get('year')}-${get('month')}-${get('day')}T${get('hour')}:${get('minute')}:${get('second')}.${ms}${get('timeZoneName').replace('GMT', '')}`;
  };

  it('When any time is formatted, then it reads as Intl writes it in the sender zone, across the DST changes too', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.parse('2019-01-01'), max: Date.parse('2030-01-01') }), (ms) => {
        expect(formatSenderTimestamp(new Date(ms))).toBe(reference(new Date(ms)));
      }),
      { numRuns: 2_000 },
    );
    for (const edge of [
      '2026-03-29T00:59:59.999Z',
      '2026-03-29T01:00:00.000Z',
      '2026-10-25T00:59:59.999Z',
      '2026-10-25T01:00:00.000Z',
    ])
      expect(formatSenderTimestamp(new Date(edge))).toBe(reference(new Date(edge)));
  });
});
