import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../support/build';
import { missingToolsProblem } from '../support/tools';
import { IMAGE, STAGE_IMAGES } from './container';

/**
 * Once per run of the image tier: buildah and mmdebstrap are there and this is root (buildah's chroot
 * isolation and the tests' mount namespaces need it), or the run stops at once with one line saying what is
 * wrong (never a test skipped); then the image is built with buildah, as `npm run image` builds it here, which
 * prints its size, and so are its build and prod-deps stages, each alone (from the same layers).
 */
export default function imageSetup(): void {
  const problem =
    missingToolsProblem(['buildah', 'mmdebstrap']) ??
    (process.getuid?.() === 0 ? null : 'it runs as root (buildah, mount namespaces): run it with sudo');
  if (problem) {
    process.stderr.write(`\nThe image tier (npm run test:image) cannot run: ${problem}\n\n`);
    process.exit(1);
  }
  process.stderr.write('\n');
  // The image, then the stages before it on their own (their layers are the image's: built once), to look inside.
  const builds: string[][] = [
    ['--tag', IMAGE],
    ...Object.entries(STAGE_IMAGES).map(([stage, tag]) => ['--target', stage, '--tag', tag]),
  ];
  for (const args of builds) {
    const build = spawnSync('bash', [path.join(ROOT, 'scripts', 'image.sh'), '--engine', 'buildah', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (build.status !== 0) {
      process.stderr.write(`\nThe image tier (npm run test:image) cannot run: the image build failed\n\n`);
      process.exit(1);
    }
  }
}
