import { paymentServiceInstant } from '../../../src/domain/paymentServiceTime';

/** The payment service's times as instants: its offset when it writes one, the named zone when it does not. */

describe('paymentServiceInstant', () => {
  it.each<[string, string, string]>([
    ['2026-11-28T07:07:38', 'Europe/Warsaw', '2026-11-28T06:07:38.000Z'],
    ['2026-07-01T12:00:00.5', 'Europe/Warsaw', '2026-07-01T10:00:00.500Z'],
    ['2026-11-28 07:07:38', 'UTC', '2026-11-28T07:07:38.000Z'],
    ['2026-11-28T07:07:38.123+01:00', 'America/New_York', '2026-11-28T06:07:38.123Z'],
    ['2026-11-28T07:07:38-0530', 'Europe/Warsaw', '2026-11-28T12:37:38.000Z'],
    ['2026-11-28T07:07:38Z', 'Europe/Warsaw', '2026-11-28T07:07:38.000Z'],
    // Epoch milliseconds in a string, as one of the spec's refund samples has them: the zone does not apply.
    ['1764310058123', 'America/New_York', '2025-11-28T06:07:38.123Z'],
  ])('When the time is %s read in %s, then the instant is %s', (text, zone, instant) => {
    expect(paymentServiceInstant(text, zone)).toBe(instant);
  });

  it('When a local time repeats (autumn), then the earlier reading; when it is skipped (spring), the offset before', () => {
    expect(paymentServiceInstant('2026-10-25T02:30:00', 'Europe/Warsaw')).toBe('2026-10-25T00:30:00.000Z');
    expect(paymentServiceInstant('2026-03-29T02:30:00', 'Europe/Warsaw')).toBe('2026-03-29T01:30:00.000Z');
  });

  it.each(['', '123456', 'yesterday', '2026-02-30T10:00:00', '2026-11-28T25:00:00', '2026-11-28'])(
    'When the text is %p, then there is no instant',
    (text) => {
      expect(paymentServiceInstant(text, 'Europe/Warsaw')).toBeNull();
    },
  );

  it('When there is no time, then there is no instant', () => {
    expect(paymentServiceInstant(null, 'Europe/Warsaw')).toBeNull();
  });
});
