import { buildIfStale } from './support/build';

/** Once per jest run, before any test file: build dist/ if the sources changed (test/support/build.ts). */
export default async function globalSetup(): Promise<void> {
  await buildIfStale();
}
