import { createHash } from 'node:crypto';
import { KNOWN_FOR_MS, KnownNotifications } from '../../../src/recording/knownNotifications';

const sha = (text: string): Buffer => createHash('sha256').update(text).digest();
const POS_A = { posId: 'A', keyFingerprint: 'ka' };
const POS_B = { posId: 'B', keyFingerprint: 'kb' };

/** Received an hour before the clock the caches below are given. */
const NOW_MS = Date.parse('2026-11-26T10:00:00Z');
const RECEIVED = '2026-11-26T09:00:00.123456+00:00';

const record = (meaning: string, id: string, body: string, ownerPosId = 'A', deliveryRows = 1) => ({
  meaning,
  id,
  receivedAt: RECEIVED,
  bodySha256: sha(body),
  ownerPosId,
  deliveryRows,
});
const idOf = (known: KnownNotifications, meaning: string, body: string, signers = [POS_A]) =>
  known.repeatOf(meaning, sha(body), signers)?.record.id;

describe('KnownNotifications', () => {
  it('When a meaning was remembered, then only its first body digest finds the record id', () => {
    const known = new KnownNotifications(10, () => NOW_MS);
    known.remember([record('order\u001fA\u001fPENDING', '7', 'first')]);
    expect(idOf(known, 'order\u001fA\u001fPENDING', 'first')).toBe('7');
    expect(idOf(known, 'order\u001fA\u001fPENDING', 're-serialized')).toBeUndefined();
    expect(idOf(known, 'order\u001fA\u001fCOMPLETED', 'first')).toBeUndefined();
  });

  it("When a repeat is signed by a key of another POS than the order's, then it is not known: the full path refuses it", () => {
    const known = new KnownNotifications(10, () => NOW_MS);
    known.remember([record('m', '1', 'a', 'A')]);
    expect(known.repeatOf('m', sha('a'), [POS_B])).toBeUndefined();
    expect(known.repeatOf('m', sha('a'), [POS_B, POS_A])).toEqual({ record: record('m', '1', 'a'), signer: POS_A });
  });

  it('When a meaning is remembered again, then the first record stays', () => {
    const known = new KnownNotifications(10, () => NOW_MS);
    known.remember([record('m', '1', 'a')]);
    known.remember([record('m', '2', 'b')]);
    expect(idOf(known, 'm', 'a')).toBe('1');
    expect(idOf(known, 'm', 'b')).toBeUndefined();
  });

  it('When a known record is remembered with more delivery rows, then its count moves on, never back', () => {
    const known = new KnownNotifications(10, () => NOW_MS);
    known.remember([record('m', '1', 'a', 'A', 3)]);
    known.remember([record('m', '1', 'a', 'A', 7)]);
    known.remember([record('m', '1', 'a', 'A', 5)]);
    expect(known.repeatOf('m', sha('a'), [POS_A])?.record.deliveryRows).toBe(7);
  });

  it('When more than the capacity is remembered, then the oldest entries are forgotten first', () => {
    const known = new KnownNotifications(3, () => NOW_MS);
    known.remember(['a', 'b', 'c', 'd'].map((meaning, i) => record(meaning, String(i), meaning)));
    expect(known.size).toBe(3);
    expect(idOf(known, 'a', 'a')).toBeUndefined();
    expect(idOf(known, 'd', 'd')).toBe('3');
  });

  it('When the cache turns over many times, then it holds exactly the newest meanings, a known one not renewed', () => {
    const known = new KnownNotifications(4, () => NOW_MS);
    const meanings = Array.from({ length: 23 }, (_, i) => `m${i}`);
    for (const meaning of meanings) {
      known.remember([record(meaning, meaning, meaning)]);
      // Remembered again (a later batch read it): it keeps its place, so it still goes when its turn comes.
      known.remember([record(meaning, meaning, meaning)]);
    }
    expect(known.size).toBe(4);
    const held = meanings.filter((meaning) => idOf(known, meaning, meaning) !== undefined);
    expect(held).toEqual(['m19', 'm20', 'm21', 'm22']);
  });

  it('When the capacity is 0, then nothing is remembered', () => {
    const known = new KnownNotifications(0, () => NOW_MS);
    known.remember([record('m', '1', 'a')]);
    expect(idOf(known, 'm', 'a')).toBeUndefined();
  });

  it('When a record was received 72 hours ago or more, then the cache no longer answers for it: the full path does', () => {
    let now = NOW_MS;
    const known = new KnownNotifications(10, () => now);
    known.remember([record('m', '1', 'a')]);
    now = Date.parse(RECEIVED) + KNOWN_FOR_MS - 1;
    expect(idOf(known, 'm', 'a')).toBe('1');
    now = Date.parse(RECEIVED) + KNOWN_FOR_MS;
    expect(idOf(known, 'm', 'a')).toBeUndefined();
  });
});
