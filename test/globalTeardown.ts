import { dropMigratedTemplate } from './support/database';

/** Once per jest run, after every test file: the migrated template goes (test/globalSetup.ts). */
export default async function globalTeardown(): Promise<void> {
  await dropMigratedTemplate();
}
