import { buildIfStale } from './support/build';

/** Once per jest run, before any test file: build dist/ if the sources changed (test/support/build.ts). */
export default function globalSetup(): void {
  buildIfStale();
}
