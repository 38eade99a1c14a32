import { buildIfStale } from './support/build';
import { createMigratedTemplate } from './support/database';

/**
 * Once per jest run, before any test file: build dist/ if the sources changed (test/support/build.ts), and
 * migrate the database the tests' services start on copies of (test/support/database.ts, MIGRATED_TEMPLATE).
 */
export default async function globalSetup(): Promise<void> {
  await Promise.all([buildIfStale(), createMigratedTemplate()]);
}
