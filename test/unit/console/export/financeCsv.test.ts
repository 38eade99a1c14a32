import { csvCell, csvLine, exportLine, exportTotals } from '../../../../src/console/export/financeCsv';
import { LocalTime } from '../../../../src/console/language/localTime';
import type { ExportRow } from '../../../../src/console/export/exportQueries';

const row = (over: Partial<ExportRow>): ExportRow => ({
  kind: 'payment',
  held: null,
  at: new Date('2026-11-27T15:40:47.123Z'),
  said: [null],
  orderId: 'WZ1K9Q7L3T',
  extOrderId: 'shop-0042',
  paymentId: '5011',
  refundId: null,
  extRefundId: null,
  amount: '223471',
  currencyCode: 'PLN',
  posId: '300746',
  ...over,
});

describe('the finance CSV', () => {
  it('When a cell would start a formula, then it is written as text; quotes are doubled; every cell is quoted', () => {
    expect(csvCell('=1+2')).toBe(`"'=1+2"`);
    expect(csvCell('+48 600')).toBe(`"'+48 600"`);
    expect(csvCell('-2+3+cmd|" /C calc"!A0')).toBe(`"'-2+3+cmd|"" /C calc""!A0"`);
    expect(csvCell('@SUM(A1)')).toBe(`"'@SUM(A1)"`);
    expect(csvCell('\tx')).toBe(`"'\tx"`);
    expect(csvCell('\rx')).toBe(`"'\rx"`);
    expect(csvCell('a,b\r\nc')).toBe('"a,b\r\nc"');
    expect(csvCell('shop "42"')).toBe('"shop ""42"""');
    expect(csvCell('\nx')).toBe(`"'\nx"`);
    expect(csvCell('a=b')).toBe('"a=b"');
    expect(csvCell('2026-11-27')).toBe('"2026-11-27"');
    expect(csvCell(null)).toBe('""');
    expect(csvLine(['a', null, 'b'])).toBe('"a","","b"\r\n');
  });

  it.each([
    ['a leading space', ' =1+2'],
    ['spaces and a tab', ' \t @SUM(A1)'],
    ['a no-break space', '\u00a0=HYPERLINK("http://x")'],
    ['an ideographic space', '\u3000+1'],
    ['a zero-width space', '\u200b-1+1'],
    ['a byte order mark', '\ufeff=1'],
    ['a fullwidth equals sign', '\uff1d1+2'],
    ['a fullwidth plus sign', '\uff0b1'],
    ['a fullwidth hyphen-minus', '\uff0d1'],
    ['a fullwidth commercial at', '\uff20SUM(A1)'],
    ['a small equals sign', '\ufe661+2'],
    ['a space before a fullwidth equals sign', ' \uff1d1'],
  ])('When a cell starts a formula after %s, then it is written as text', (_what, value) => {
    expect(csvCell(value)).toBe(`"'${value.replace(/"/g, '""')}"`);
  });

  it('When a payment or refund is written, then its amount is in major units with a dot and its time carries its offset', () => {
    const warsaw = new LocalTime('Europe/Warsaw', 'pl-PL');
    expect(exportLine(row({}), warsaw, 'Europe/Warsaw')).toBe(
      '"payment","2026-11-27T16:40:47.123+01:00","shop-0042","5011","WZ1K9Q7L3T","","","2234.71","PLN","300746",""\r\n',
    );
    expect(exportLine(row({ amount: '1234', currencyCode: 'JPY' }), warsaw, 'Europe/Warsaw')).toContain('"1234","JPY"');
    expect(exportLine(row({ amount: '1234', currencyCode: 'KWD' }), warsaw, 'Europe/Warsaw')).toContain(
      '"1.234","KWD"',
    );
    expect(exportLine(row({ amount: '9223372036854775807' }), warsaw, 'Europe/Warsaw')).toContain(
      '"92233720368547758.07"',
    );
    expect(
      exportLine(row({ kind: 'refund', refundId: 'R1', extRefundId: '-1', amount: '28013' }), warsaw, 'Europe/Warsaw'),
    ).toBe(
      `"refund","2026-11-27T16:40:47.123+01:00","shop-0042","5011","WZ1K9Q7L3T","R1","'-1","280.13","PLN","300746",""\r\n`,
    );
  });

  it('When the payment service gave its own time, then that is the booking time, read in its zone when it has no offset', () => {
    const warsaw = new LocalTime('Europe/Warsaw', 'pl-PL');
    const utc = new LocalTime('UTC', 'en-GB');
    // A payment the payment service took at 23:59:58 its time (no offset), recorded here after midnight.
    const late = row({ at: new Date('2026-11-27T23:00:03.000Z'), said: ['2026-11-27T23:59:58'] });
    expect(exportLine(late, warsaw, 'Europe/Warsaw')).toContain('"payment","2026-11-27T23:59:58.000+01:00",');
    expect(exportLine(late, utc, 'Europe/Warsaw')).toContain('"payment","2026-11-27T22:59:58.000+00:00",');
    // A refund: its refund date, else its status's time; one that reads as no time is skipped.
    const refund = row({ kind: 'refund', said: ['not a time', '2026-11-27T10:00:00.000+02:00'] });
    expect(exportLine(refund, utc, 'Europe/Warsaw')).toContain('"refund","2026-11-27T08:00:00.000+00:00",');
  });

  it('When an amount cannot be given in major units, then the cell is empty and the note says it as received', () => {
    const utc = new LocalTime('UTC', 'en-GB');
    expect(exportLine(row({ currencyCode: 'XYZ' }), utc, 'Europe/Warsaw')).toContain(
      '"","XYZ","300746","amount not in major units: 223471 minor units of XYZ, as received"',
    );
    expect(exportLine(row({ amount: null }), utc, 'Europe/Warsaw')).toContain(
      '"","PLN","300746","no amount was received"',
    );
  });

  it('When an item is held, then its type says so and its note says what came and to book nothing', () => {
    const note = 'held: COMPLETED and then CANCELED both came; book nothing until reconciled with the payment service';
    const line = exportLine(
      row({ kind: 'held_payment', held: note }),
      new LocalTime('Europe/Warsaw', 'en-GB'),
      'Europe/Warsaw',
    );
    expect(line.startsWith('"held_payment",')).toBe(true);
    expect(line.endsWith(`"${note}"\r\n`)).toBe(true);
  });

  it('When totals are made, then each type and currency has its count and sum, held apart, rows without an amount counted', async () => {
    const totals = await exportTotals([
      row({ amount: '100' }),
      row({ amount: '250' }),
      row({ amount: '7', currencyCode: 'EUR' }),
      row({ kind: 'refund', amount: '50' }),
      row({ kind: 'refund', amount: null }),
      row({ kind: 'held_payment', amount: '900', held: 'held' }),
    ]);
    expect(totals.map((t) => [t.kind, t.currencyCode, t.count, t.minorUnits, t.withoutAmount])).toEqual([
      ['payment', 'EUR', 1, 7n, 0],
      ['payment', 'PLN', 2, 350n, 0],
      ['refund', 'PLN', 2, 50n, 1],
      ['held_payment', 'PLN', 1, 900n, 0],
    ]);
  });
});
