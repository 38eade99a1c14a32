import { randomInt as cryptoRandomInt } from 'node:crypto';

/** A source of numbers in [0, 1). Seeded for reproducible runs; passed explicitly (no module state). */
export type Random = () => number;

/** mulberry32: small, fast, good enough to vary test traffic; the same seed gives the same run. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random seed, for runs that do not ask for one (the report names it so a run can be repeated). */
export function freshSeed(): number {
  return cryptoRandomInt(0, 2 ** 31 - 1);
}

/** An integer in [min, max]. */
export function randomInt(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

export function pick<T>(random: Random, items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from an empty list');
  return items[Math.floor(random() * items.length)] as T;
}

export function chance(random: Random, probability: number): boolean {
  return probability > 0 && random() < probability;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function randomString(random: Random, length: number, alphabet = ALPHANUMERIC): string {
  let result = '';
  for (let i = 0; i < length; i++) result += alphabet[Math.floor(random() * alphabet.length)];
  return result;
}
