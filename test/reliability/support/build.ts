import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIfStale, ROOT } from '../../support/build';

/**
 * The service runs as a real child process (SIGKILL, SIGTERM, RSS), built from the current src/ into
 * a private directory under the OS temp dir so the suite never races anyone else's `dist/`.
 * The build dir mirrors the repository layout the service expects: dist/ beside sql/ and node_modules/
 * (symlinks), so `dist/database/migrations.js` finds `../../sql`.
 */
const BUILD_ROOT = path.join(
  os.tmpdir(),
  `nr-reliability-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 10)}`,
);
const MAIN_JS = path.join(BUILD_ROOT, 'dist', 'main.js');

function link(name: string): void {
  const target = path.join(ROOT, name);
  const at = path.join(BUILD_ROOT, name);
  try {
    if (fs.readlinkSync(at) === target) return;
    fs.unlinkSync(at);
  } catch {
    // absent
  }
  fs.symlinkSync(target, at);
}

let built: Promise<string> | null = null;

/** Builds the private copy when src/ changed; once per test process, so every scenario of a run tests the same code. */
export function ensureBuilt(): Promise<string> {
  built ??= (async () => {
    fs.mkdirSync(BUILD_ROOT, { recursive: true });
    link('sql');
    link('node_modules');
    await buildIfStale(path.join(BUILD_ROOT, 'dist'));
    return MAIN_JS;
  })();
  return built;
}
