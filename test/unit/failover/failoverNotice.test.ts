import type { BeatRow } from '../../../src/failover/failoverQueries';
import { noticeOf, rememberBeat, type WatchMemory } from '../../../src/failover/failoverNotice';

const lastPoint = new Date('2026-12-02T10:00:00Z');
const server = '7714589812733716601';
const row = (over: Partial<BeatRow> = {}): BeatRow => ({
  beat: 100,
  previousBeatAt: lastPoint,
  stored: { server, timeline: 1 },
  identity: { server, timeline: 1 },
  recovery: null,
  ...over,
});
const memory = (over: Partial<WatchMemory> = {}): WatchMemory => ({
  identity: { server, timeline: 1 },
  highestBeat: 99,
  ...over,
});

describe('noticeOf', () => {
  it('When a replica starts on the database it knew, then it is no failover (a restart)', () => {
    expect(noticeOf(null, row())).toBeNull();
  });

  it('When a replica starts on a new database (nothing stored yet), then it is no failover', () => {
    expect(noticeOf(null, row({ stored: null }))).toBeNull();
  });

  it('When the beat moved on with the same identity (a reconnect to the same database), then it is no failover', () => {
    expect(noticeOf(memory(), row({ beat: 150 }))).toBeNull();
  });

  it('When the timeline changed, then it is a failover to that timeline, ending at the last beat it holds', () => {
    expect(noticeOf(memory(), row({ identity: { server, timeline: 2 }, beat: 150 }))).toEqual({
      cause: 'timeline',
      previous: `timeline 1 of server ${server}`,
      current: `timeline 2 of server ${server}`,
      lastPoint,
      identity: { server, timeline: 2 },
    });
  });

  it('When the server changed, then it is a failover to another server', () => {
    expect(noticeOf(memory(), row({ identity: { server: '1', timeline: 1 }, beat: 150 }))?.cause).toBe('server');
  });

  it('When a replica starts and the database stores another identity than it has now, then it is a failover', () => {
    expect(noticeOf(null, row({ identity: { server, timeline: 3 } }))?.cause).toBe('timeline');
  });

  it('When the beat went back (the database lost a beat it acknowledged), then it is a failover, with no privilege', () => {
    const notice = noticeOf(memory({ identity: null }), row({ beat: 42, identity: null, stored: null }));
    expect(notice).toMatchObject({ cause: 'beat', previous: 'beat 99', current: 'beat 42', identity: null });
  });

  it('When the beat equals the highest seen, then it went back too (a beat is never given twice)', () => {
    expect(noticeOf(memory(), row({ beat: 99 }))?.cause).toBe('beat');
  });

  it('When the identity cannot be read, then only the beat tells', () => {
    expect(noticeOf(memory({ identity: null }), row({ identity: null, beat: 100 }))).toBeNull();
  });
});

describe('rememberBeat', () => {
  it('When nothing was noticed, then the highest beat only grows', () => {
    expect(rememberBeat(memory({ highestBeat: 500 }), row({ beat: 100 }), false).highestBeat).toBe(500);
    expect(rememberBeat(memory(), row({ beat: 150 }), false).highestBeat).toBe(150);
  });

  it('When a failover was noticed, then the promoted database is what is remembered from then on', () => {
    const after = rememberBeat(
      memory({ highestBeat: 500 }),
      row({ beat: 42, identity: { server, timeline: 2 } }),
      true,
    );
    expect(after).toEqual({ identity: { server, timeline: 2 }, highestBeat: 42 });
    expect(noticeOf(after, row({ beat: 43, identity: { server, timeline: 2 } }))).toBeNull();
  });
});
