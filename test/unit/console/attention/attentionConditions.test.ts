import { LocalTime } from '../../../../src/console/language/localTime';
import type { Attention } from '../../../../src/console/attention/attentionQueries';
import type { UnroutedType } from '../../../../src/console/attention/unroutedTypeQueries';
import { conditions } from '../../../../src/console/attention/attentionConditions';
import type { BoardOptions } from '../../../../src/console/attention/boardCondition';
import type { PageContext } from '../../../../src/console/frame/layout';
import type { Failover } from '../../../../src/failover/failoverQueries';
const now = new Date('2026-11-27T15:00:00Z');
const ctx: PageContext = {
  viewer: null,
  now,
  clock: new LocalTime('Europe/Warsaw', 'en-GB'),
  paymentServiceTimeZone: 'Europe/Warsaw',
};
const ago = (ms: number) => new Date(now.getTime() - ms);
const MIN = 60_000;
const HOUR = 60 * MIN;
const calm: Attention = {
  quarantined: [],
  quarantinedCount: { count: 0, more: false },
  quarantinedSince: null,
  givenUp: [],
  givenUpCount: { count: 0, more: false },
  troubled: [],
  pending: { count: 0, orders: 0, oldest: null, countBound: 10_000, reasons: [] },
  waitingOrders: [],
  unroutedTypes: [],
  learnt: [],
  confirmations: [],
  confirmationsCount: { count: 0, more: false },
  lastDeliveryAt: ago(MIN),
  reachability: [{ posId: '300746', state: 'answering', since: ago(HOUR), detail: '', confirmedAt: ago(MIN) }],
  historyDaysAhead: 1,
  failover: null,
};
const options: BoardOptions = { quietAfterMs: HOUR, confirmWithinMs: 3 * 24 * HOUR, checksOn: true };
const text = (html: { text: string }) => html.text.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ');
const lines = (a: Partial<Attention>, o: Partial<BoardOptions> = {}) =>
  conditions({ ...calm, ...a }, ctx, { ...options, ...o }).map((c) => ({
    id: c.id,
    severity: c.severity,
    title: text(c.title),
    now: text(c.now),
    link: c.link?.href.path ?? null,
  }));

describe('needs attention: the status board', () => {
  it('When all is well, then every condition has its line, each all well', () => {
    const board = lines({});
    expect(board.map((l) => l.id).sort()).toEqual(
      [
        'confirmation',
        'contradictions',
        'events-unrouted',
        'events-waiting',
        'failover',
        'learnt',
        'given-up',
        'history-days',
        'payment-api',
        'set-aside',
        'silence',
      ].sort(),
    );
    expect(new Set(board.map((l) => l.severity))).toEqual(new Set(['ok']));
  });

  it('When the payment API cannot be reached for a POS, then its line comes first, critical, naming the POS and what fails', () => {
    const [first] = lines({
      reachability: [
        { posId: '300746', state: 'unreachable', since: ago(HOUR), detail: 'timeout', confirmedAt: ago(MIN) },
        { posId: '145227', state: 'answering', since: ago(HOUR), detail: '', confirmedAt: ago(MIN) },
      ],
    });
    expect(first).toMatchObject({
      id: 'payment-api-300746',
      severity: 'critical',
      link: '/console/attention#payment-api',
    });
    expect(first?.title).toBe('The payment service cannot be reached for shop account 300746');
    expect(first?.now).toContain('it does not answer in time');
    const refused = lines({
      reachability: [
        { posId: '145227', state: 'refused', since: ago(HOUR), detail: 'credentials', confirmedAt: ago(MIN) },
      ],
    })[0];
    expect(refused?.title).toBe('The payment service refuses the credentials of shop account 145227');
  });

  const unrouted = (type: UnroutedType['type'], expected: boolean): UnroutedType => ({
    type,
    events: 3,
    countBound: 10_000,
    orders: 2,
    since: ago(2 * HOUR),
    latest: ago(HOUR),
    latestOrderId: 'ORDER/1',
    expected,
  });

  it('When events of a type went out with no queue bound, then a warning names the type, how many, since when, and links the latest order', () => {
    const line = lines({ unroutedTypes: [unrouted('order.pending', false)] }).find((l) => l.id === 'events-unrouted');
    expect(line).toMatchObject({
      severity: 'warning',
      title: 'Events no service listened for',
      link: '/console/orders/ORDER%2F1',
    });
    expect(line?.now).toContain('order.pending: 3 events about 2 orders reached no queue, the first');
    expect(line?.now).toContain('14:00');
  });

  it('When the only types that reached no queue are declared expected, then the line is all well, still counts them, and says it is normal', () => {
    const board = conditions({ ...calm, unroutedTypes: [unrouted('order.pending', true)] }, ctx, options);
    const line = board.find((l) => l.id === 'events-unrouted');
    expect(line?.severity).toBe('ok');
    expect(text(line?.now ?? { text: '' })).toContain(
      '3 events of expected types (order.pending) reached no queue, as declared in EXPECTED_UNROUTED_EVENT_TYPES.',
    );
    expect(text(line?.meaning ?? { text: '' })).toContain('That is normal');
  });

  it('When an expected and an unexpected type reached no queue, then the warning is about the unexpected one and counts the other', () => {
    const line = lines({
      unroutedTypes: [unrouted('order.pending', true), unrouted('refund.pending', false)],
    }).find((l) => l.id === 'events-unrouted');
    expect(line?.severity).toBe('warning');
    expect(line?.now).toMatch(/^refund\.pending: 3 events/);
    expect(line?.now).toContain('3 events of expected types (order.pending) reached no queue, as declared');
  });

  it('When statuses were learnt by asking the payment service, then notifications that never came are a warning by POS and “Notifications arrive” is not all well', () => {
    const board = lines({
      learnt: [
        {
          posId: '300746',
          statuses: { count: 5, more: false },
          orders: 4,
          first: ago(3 * HOUR),
          latest: ago(HOUR),
          latestOrderId: 'O1',
        },
      ],
    });
    const learnt = board.find((l) => l.id === 'learnt');
    expect(learnt).toMatchObject({ severity: 'warning', title: 'Notifications that never came' });
    expect(learnt?.now).toContain('5 statuses of 4 orders of shop account 300746 had to be learnt');
    expect(board.find((l) => l.id === 'silence')).toMatchObject({
      severity: 'warning',
      title: 'Notifications arrive, but not all of them',
    });
  });

  it('When events wait, then the line says why and for how many orders, and worsens with their age', () => {
    const waiting = (ageMs: number) =>
      lines({
        pending: {
          count: 82,
          orders: 40,
          oldest: ago(ageMs),
          countBound: 10_000,
          reasons: [{ reason: 'returned: unroutable: no queue bound', events: 82 }],
        },
      }).find((l) => l.id === 'events-waiting');
    expect(waiting(10_000)?.severity).toBe('ok');
    expect(waiting(5 * MIN)?.severity).toBe('warning');
    const stuck = waiting(20 * MIN);
    expect(stuck?.severity).toBe('critical');
    expect(stuck?.now).toContain('82 events about 40 orders are waiting');
    expect(stuck?.now).toContain('returned: unroutable: no queue bound (82 events)');
    expect(stuck?.link).toBe('/console/attention#events-waiting');
  });

  it('When a payment waits for confirmation, then its deadline is given, and under a day from it the line is critical', () => {
    const confirmation = (sinceMs: number, within: number | null) =>
      lines(
        {
          confirmations: [
            {
              orderId: 'A',
              extOrderId: null,
              totalAmount: '100',
              currencyCode: 'PLN',
              posId: '300746',
              since: ago(sinceMs),
            },
          ],
          confirmationsCount: { count: 1, more: false },
        },
        { confirmWithinMs: within },
      ).find((l) => l.id === 'confirmation');
    expect(confirmation(HOUR, 3 * 24 * HOUR)?.severity).toBe('warning');
    expect(confirmation(HOUR, 3 * 24 * HOUR)?.now).toMatch(/The first deadline: 30 Nov 2026, 15:00:00 CET/);
    expect(confirmation(60 * HOUR, 3 * 24 * HOUR)?.severity).toBe('critical');
    expect(confirmation(HOUR, null)?.now).toContain('CONSOLE_CONFIRM_WITHIN is not set');
  });

  it('When notifications stop, a day is missing, or checks are off, then each says so', () => {
    expect(lines({ lastDeliveryAt: ago(2 * HOUR) }).find((l) => l.id === 'silence')?.severity).toBe('warning');
    expect(lines({ historyDaysAhead: -1 }).find((l) => l.id === 'history-days')?.severity).toBe('critical');
    expect(lines({ historyDaysAhead: 0 }).find((l) => l.id === 'history-days')?.severity).toBe('warning');
    expect(lines({}, { checksOn: false }).find((l) => l.id === 'payment-api')).toMatchObject({ severity: 'info' });
    expect(lines({ quarantinedCount: { count: 1000, more: true } }).find((l) => l.id === 'set-aside')?.now).toContain(
      'more than 1000 notifications',
    );
  });

  describe('the failover line', () => {
    const failover = (over: Partial<Failover>): Failover => ({
      id: '1',
      noticedAt: ago(10 * MIN),
      noticedBy: 'pod-a',
      cause: 'timeline',
      previousIdentity: 'timeline 1 of server 1',
      currentIdentity: 'timeline 2 of server 1',
      lastPoint: ago(11 * MIN),
      state: 'done',
      journalRead: 120,
      restored: 117,
      alreadyRecorded: 3,
      setAside: 0,
      journalProblem: null,
      windowOrders: 40,
      uncovered: 0,
      restoredAt: ago(10 * MIN),
      doneAt: ago(8 * MIN),
      ...over,
    });
    const line = (f: Failover | null) => lines({ failover: f }).find((l) => l.id === 'failover');

    it('When a recovery is under way, then it comes first, critical, saying what is being done', () => {
      const [first] = lines({ failover: failover({ state: 'restoring', doneAt: null, windowOrders: null }) });
      expect(first).toMatchObject({ id: 'failover', severity: 'critical' });
      expect(first?.title).toContain('what it lost is being restored');
      expect(line(failover({ state: 'reconciling', doneAt: null }))?.now).toContain('117 statuses came back');
    });

    it('When the recovery left orders no check could settle, then it says how many, and never all well', () => {
      const l = line(failover({ uncovered: 4 }));
      expect(l?.severity).toBe('warning');
      expect(l?.title).toContain('some statuses may be missing');
      expect(l?.now).toContain('4 orders could not be');
    });

    it('When the journal could not be read, then it is critical and says why', () => {
      const l = line(failover({ journalProblem: 'the journal’s fence did not come back within 30000 ms' }));
      expect(l?.severity).toBe('critical');
      expect(l?.now).toContain('the journal could not be read');
    });

    it('When everything was restored, then it says so for a week, as good to know, then all well', () => {
      expect(line(failover({}))).toMatchObject({
        severity: 'info',
        title: 'The database failed over, and everything was restored',
      });
      expect(line(failover({ noticedAt: ago(8 * 24 * HOUR) }))).toMatchObject({ severity: 'ok' });
    });
  });
});
