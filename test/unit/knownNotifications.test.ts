import { createHash } from 'node:crypto';
import { KnownNotifications } from '../../src/recording/knownNotifications';

const sha = (text: string): Buffer => createHash('sha256').update(text).digest();

describe('KnownNotifications', () => {
  it('When a meaning was remembered, then only its first body digest finds the record id', () => {
    const known = new KnownNotifications(10);
    known.remember([{ meaning: 'order\u001fA\u001fPENDING', id: '7', bodySha256: sha('first') }]);
    expect(known.idOf('order\u001fA\u001fPENDING', sha('first'))).toBe('7');
    expect(known.idOf('order\u001fA\u001fPENDING', sha('re-serialized'))).toBeUndefined();
    expect(known.idOf('order\u001fA\u001fCOMPLETED', sha('first'))).toBeUndefined();
  });

  it('When a meaning is remembered again, then the first record stays', () => {
    const known = new KnownNotifications(10);
    known.remember([{ meaning: 'm', id: '1', bodySha256: sha('a') }]);
    known.remember([{ meaning: 'm', id: '2', bodySha256: sha('b') }]);
    expect(known.idOf('m', sha('a'))).toBe('1');
    expect(known.idOf('m', sha('b'))).toBeUndefined();
  });

  it('When more than the capacity is remembered, then the oldest entries are forgotten first', () => {
    const known = new KnownNotifications(3);
    known.remember(['a', 'b', 'c', 'd'].map((meaning, i) => ({ meaning, id: String(i), bodySha256: sha(meaning) })));
    expect(known.size).toBe(3);
    expect(known.idOf('a', sha('a'))).toBeUndefined();
    expect(known.idOf('d', sha('d'))).toBe('3');
  });

  it('When the capacity is 0, then nothing is remembered', () => {
    const known = new KnownNotifications(0);
    known.remember([{ meaning: 'm', id: '1', bodySha256: sha('a') }]);
    expect(known.idOf('m', sha('a'))).toBeUndefined();
  });
});
