import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Captured notifications (bodies byte-exact) with the keys that verify them; copied from shared/. */
export interface Fixture {
  id: string;
  kind: 'order' | 'refund';
  status: string | null;
  headers: Record<string, string>;
  body: string;
  secondKey: string | null;
  algorithm: string | null;
  signatureVerifies: boolean | null;
  note: string;
}

export const fixtures: Fixture[] = (
  JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', 'real-notifications.json'), 'utf8')) as {
    fixtures: Fixture[];
  }
).fixtures;

export function fixture(id: string): Fixture {
  const found = fixtures.find((f) => f.id === id);
  if (!found) throw new Error(`no fixture ${id}`);
  return found;
}

/** The signature header of a fixture, whichever spelling it carries. */
export function signatureHeaderOf(f: Fixture): string | undefined {
  return f.headers['OpenSvc-Signature'] ?? f.headers['X-OpenSvc-Signature'];
}
