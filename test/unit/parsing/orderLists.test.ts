import {
  CLOCK_SKEW_MS,
  EXPECTED_FILE_MAX,
  EXPECTED_ORDERS_MAX,
  ORDER_LIST_MAX,
  readExpectedOrder,
  readExpectedOrderLines,
  readExpectedOrders,
  readOrderIdLines,
  readOrderIds,
  type ExpectedOrderRules,
} from '../../../src/parsing/orderLists';

const NOW = new Date('2026-11-28T10:00:00Z');
const DAY = 86_400_000;
const rules: ExpectedOrderRules = { knownPos: ['300746', '145227'], now: NOW, oldestMs: 7 * DAY };
const entry = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  orderId: 'PB68465GCH200213GUEST000P01',
  posId: '300746',
  createdAt: '2026-11-28T09:59:00+01:00',
  ...fields,
});

describe('readExpectedOrder', () => {
  it('When an entry names an order, a known POS and a creation time with an offset, then it is read, other fields ignored', () => {
    expect(readExpectedOrder(entry({ amount: 1000 }), rules, 0)).toEqual({
      ok: true,
      value: { orderId: 'PB68465GCH200213GUEST000P01', posId: '300746', createdAt: new Date('2026-11-28T08:59:00Z') },
    });
  });

  it.each<[string, unknown, string | null, string]>([
    ['not an object', 'PB68', null, 'not an object'],
    ['an array', [entry()], null, 'not an object'],
    ['null', null, null, 'not an object'],
    ['no orderId', entry({ orderId: undefined }), 'orderId', 'missing, or not a string'],
    ['a numeric orderId', entry({ orderId: 42 }), 'orderId', 'missing, or not a string'],
    ['an orderId with a /', entry({ orderId: 'a/b' }), 'orderId', 'contains "/"'],
    ['an orderId of ..', entry({ orderId: '..' }), 'orderId', 'dot segment'],
    ['an orderId over 128 characters', entry({ orderId: 'x'.repeat(129) }), 'orderId', 'longer than 128'],
    ['an orderId with a control character', entry({ orderId: 'a\u0000b' }), 'orderId', 'control character'],
    ['an orderId with a bidirectional override', entry({ orderId: 'a\u202eb' }), 'orderId', 'format character'],
    ['no posId', entry({ posId: undefined }), 'posId', 'missing, or not a string'],
    ['a POS no key is configured for', entry({ posId: '999999' }), 'posId', 'SECOND_KEYS'],
    ['a numeric posId', entry({ posId: 300746 }), 'posId', 'missing, or not a string'],
    ['no createdAt', entry({ createdAt: undefined }), 'createdAt', 'missing, or not a string'],
    ['createdAt as epoch milliseconds', entry({ createdAt: NOW.getTime() }), 'createdAt', 'missing, or not a string'],
    ['createdAt without an offset', entry({ createdAt: '2026-11-28T09:00:00' }), 'createdAt', 'with an offset'],
    ['createdAt on February 30', entry({ createdAt: '2026-02-30T09:00:00Z' }), 'createdAt', 'with an offset'],
    [
      'createdAt beyond the clock skew',
      entry({ createdAt: new Date(NOW.getTime() + CLOCK_SKEW_MS + 1000).toISOString() }),
      'createdAt',
      'in the future',
    ],
    [
      'createdAt older than RECONCILE_GIVE_UP',
      entry({ createdAt: new Date(NOW.getTime() - 7 * DAY - 1000).toISOString() }),
      'createdAt',
      'older than RECONCILE_GIVE_UP',
    ],
  ])('When an entry has %s, then it is refused naming the field', (_, value, field, problem) => {
    const read = readExpectedOrder(value, rules, 3);
    expect(read).toEqual({ ok: false, problem: { at: 3, field, problem: expect.stringContaining(problem) } });
  });

  it('When createdAt is within the clock skew ahead, or just within RECONCILE_GIVE_UP, then it is taken', () => {
    for (const ms of [NOW.getTime() + CLOCK_SKEW_MS, NOW.getTime() - 7 * DAY + 1000])
      expect(readExpectedOrder(entry({ createdAt: new Date(ms).toISOString() }), rules, 0).ok).toBe(true);
  });
});

describe('readExpectedOrders and readExpectedOrderLines', () => {
  it('When a body holds valid entries, then all are read in order; the first bad one is named by its index', () => {
    const good = readExpectedOrders([entry({ orderId: 'A1' }), entry({ orderId: 'A2' })], rules);
    expect(good.ok && good.value.map((o) => o.orderId)).toEqual(['A1', 'A2']);
    expect(readExpectedOrders([entry(), entry({ posId: 'x' }), entry({ orderId: '' })], rules)).toEqual({
      ok: false,
      problem: expect.objectContaining({ at: 1, field: 'posId' }),
    });
  });

  it.each<[string, unknown]>([
    ['an object', entry()],
    ['an empty array', []],
    ['null', null],
  ])('When the body is %s, then it is refused as a whole', (_, body) => {
    expect(readExpectedOrders(body, rules)).toEqual({ ok: false, problem: expect.objectContaining({ field: null }) });
  });

  it('When a body holds more than EXPECTED_ORDERS_MAX entries, then it is refused', () => {
    const body = Array.from({ length: EXPECTED_ORDERS_MAX + 1 }, (_, i) => entry({ orderId: `O${i}` }));
    expect(readExpectedOrders(body, rules)).toEqual({
      ok: false,
      problem: expect.objectContaining({ problem: expect.stringContaining(`${EXPECTED_ORDERS_MAX}`), tooLong: true }),
    });
    expect(readExpectedOrders(body.slice(1), rules).ok).toBe(true);
  });

  it('When a file holds JSON lines, blank ones and CRLF included, then each is read; a bad one is named by its line', () => {
    const text = `${JSON.stringify(entry({ orderId: 'L1' }))}\r\n\n  \n${JSON.stringify(entry({ orderId: 'L2' }))}\n`;
    const read = readExpectedOrderLines(text, rules);
    expect(read.ok && read.value.map((o) => o.orderId)).toEqual(['L1', 'L2']);
    expect(readExpectedOrderLines(`${JSON.stringify(entry())}\n\n{"orderId": `, rules)).toEqual({
      ok: false,
      problem: { at: 3, field: null, problem: 'not JSON' },
    });
    expect(
      readExpectedOrderLines(`${JSON.stringify(entry())}\n${JSON.stringify(entry({ createdAt: 'x' }))}`, rules),
    ).toEqual({ ok: false, problem: expect.objectContaining({ at: 2, field: 'createdAt' }) });
    expect(readExpectedOrderLines('', rules)).toEqual({ ok: true, value: [] });
  });

  it('When a file holds more than EXPECTED_FILE_MAX orders, then it is refused at the line past it', () => {
    const line = JSON.stringify(entry());
    const text = Array.from({ length: EXPECTED_FILE_MAX + 1 }, () => line).join('\n');
    expect(readExpectedOrderLines(text, rules)).toEqual({
      ok: false,
      problem: {
        at: EXPECTED_FILE_MAX + 1,
        field: null,
        problem: `more than ${EXPECTED_FILE_MAX} orders`,
        tooLong: true,
      },
    });
  });
});

describe('readOrderIds and readOrderIdLines', () => {
  it('When a list names orders, repeats included, then each is read once in the order first given', () => {
    expect(readOrderIds(['B', 'A', 'B'])).toEqual({ ok: true, value: ['B', 'A'] });
    expect(readOrderIdLines(' B \r\nA\n\nB\n')).toEqual({ ok: true, value: ['B', 'A'] });
  });

  it.each<[string, unknown, number]>([
    ['a number', ['A', 7], 1],
    ['an id with a /', ['A', 'B', 'c/d'], 2],
    ['an empty id', [''], 0],
  ])('When a body list holds %s, then it is refused naming its index', (_, list, at) => {
    expect(readOrderIds(list)).toEqual({ ok: false, problem: expect.objectContaining({ at, field: 'orderId' }) });
  });

  it('When a line holds an id that cannot be one, then it is refused naming the line', () => {
    expect(readOrderIdLines('A\n\nB\n..\nC')).toEqual({
      ok: false,
      problem: { at: 4, field: 'orderId', problem: 'the id is a dot segment ("." or "..")' },
    });
    expect(readOrderIdLines('A\nb\u0007c')).toEqual({
      ok: false,
      problem: expect.objectContaining({ at: 2, field: 'orderId' }),
    });
  });

  it('When a list is empty, not a list, or longer than ORDER_LIST_MAX, then it is refused', () => {
    expect(readOrderIds([]).ok).toBe(false);
    expect(readOrderIds('A').ok).toBe(false);
    expect(readOrderIdLines('\n \n').ok).toBe(false);
    const many = Array.from({ length: ORDER_LIST_MAX + 1 }, (_, i) => `O${i}`);
    expect(readOrderIds(many)).toEqual({ ok: false, problem: expect.objectContaining({ tooLong: true }) });
    expect(readOrderIds(many.slice(1)).ok).toBe(true);
    expect(readOrderIdLines(many.join('\n'))).toEqual({
      ok: false,
      problem: { at: ORDER_LIST_MAX + 1, field: null, problem: `more than ${ORDER_LIST_MAX} order ids`, tooLong: true },
    });
    expect(readOrderIdLines(many.slice(1).join('\n')).ok).toBe(true);
  });
});
