import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
/** Written after a complete build: dist/ files alone cannot tell a finished build from one in progress. */
const STAMP = path.join(ROOT, 'node_modules', '.cache', 'notification-receiver-build-stamp');

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSourceMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function stampMtime(): number {
  try {
    return statSync(STAMP).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Builds dist/ (tsconfig.build.json) when any source is newer than the last complete build, or
 * dist/ is gone. The CLI, chart and relay tests run the built app. Jest's globalSetup calls this
 * once before any test file starts, so workers never build concurrently or see a half-written
 * dist/.
 */
export function buildIfStale(): void {
  const started = Date.now();
  const present =
    existsSync(path.join(ROOT, 'dist', 'main.js')) && existsSync(path.join(ROOT, 'dist', 'cli', 'index.js'));
  if (present && stampMtime() >= newestSourceMtime(path.join(ROOT, 'src'))) return;
  const result = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  // tsc emits despite type errors (exit 2); `npm test` type-checks separately, so only a failed emit fails here.
  if (result.status !== 0 && result.status !== 2)
    throw new Error(`build failed (${result.status}):\n${result.stdout}${result.stderr}`);
  mkdirSync(path.dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, `${new Date(started).toISOString()}\n`);
}
