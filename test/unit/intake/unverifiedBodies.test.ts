import { UnverifiedBodies } from '../../../src/intake/unverifiedBodies';

describe('UnverifiedBodies', () => {
  it('When bodies reserve within the limit, then each gets room and the bytes held add up', () => {
    const budget = new UnverifiedBodies(100);
    expect(budget.reserve(60)).not.toBeNull();
    expect(budget.reserve(40)).not.toBeNull();
    expect(budget.heldBytes).toBe(100);
  });

  it('When a body would take the held bytes over the limit, then it gets no room and nothing is held for it', () => {
    const budget = new UnverifiedBodies(100);
    budget.reserve(60);
    expect(budget.reserve(41)).toBeNull();
    expect(budget.heldBytes).toBe(60);
    expect(new UnverifiedBodies(100).reserve(101)).toBeNull();
  });

  it('When a reservation is given back, then its room is free again, and giving it back twice frees it once', () => {
    const budget = new UnverifiedBodies(100);
    const first = budget.reserve(60);
    const second = budget.reserve(40);
    first?.();
    first?.();
    expect(budget.heldBytes).toBe(40);
    expect(budget.reserve(61)).toBeNull();
    const third = budget.reserve(60);
    expect(third).not.toBeNull();
    second?.();
    third?.();
    expect(budget.heldBytes).toBe(0);
  });
});
