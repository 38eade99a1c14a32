import { buildIfStale } from './support/build';
import { missingToolsProblem } from './support/tools';

/**
 * Once per run of the tools tier: every program it needs is there, or the run stops at once with one line
 * saying what to install (never a test skipped); then dist/ is built as for the integration tier.
 */
export default async function toolsSetup(): Promise<void> {
  const problem = missingToolsProblem(['nginx', 'promtool', 'prometheus', 'chromium']);
  if (problem) {
    process.stderr.write(`\nThe tools tier (npm run test:tools) cannot run: ${problem}\n\n`);
    process.exit(1);
  }
  await buildIfStale();
}
