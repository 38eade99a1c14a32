import { signerFor, signersFor } from '../../../src/verification/posBinding';

const A = { posId: 'A', keyFingerprint: 'ka' };
const A2 = { posId: 'A', keyFingerprint: 'ka2' };
const B = { posId: 'B', keyFingerprint: 'kb' };

describe('signersFor (rule 1: a body naming its POS is vouched for by that POS only)', () => {
  it('When the body names no POS, then every key that verified it stays', () => {
    expect(signersFor([A, B], null)).toEqual([A, B]);
  });

  it("When the body names a POS, then only that POS's keys stay, and none when no key of it verified", () => {
    expect(signersFor([A, B, A2], 'A')).toEqual([A, A2]);
    expect(signersFor([A], 'B')).toEqual([]);
  });
});

describe('signerFor (rule 2: an order belongs to the POS that first vouched for it)', () => {
  it('When no order is bound yet, then the first signer vouches', () => {
    expect(signerFor([B, A], [])).toBe(B);
    expect(signerFor([B, A], [undefined, undefined])).toBe(B);
  });

  it("When the orders are bound to one POS, then that POS's key vouches, whichever others verified", () => {
    expect(signerFor([B, A], ['A', undefined, 'A'])).toBe(A);
  });

  it('When the owner did not sign, or the orders belong to two POS, then no one vouches (pos_mismatch)', () => {
    expect(signerFor([B], ['A'])).toBeUndefined();
    expect(signerFor([A, B], ['A', 'B'])).toBeUndefined();
    expect(signerFor([], [])).toBeUndefined();
  });
});
