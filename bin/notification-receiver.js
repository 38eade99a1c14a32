#!/usr/bin/env node
'use strict';
/**
 * The `notification-receiver` command (`npx notification-receiver`). The command line is TypeScript
 * compiled to dist/, which `npm ci` does not build: in a clone (sources and compiler present) this
 * compiles first, as `npm start` and `npm run cli` do (`tsc -b`: incremental, nothing to do when
 * nothing changed), then runs it. Where only dist/ exists (the image), it runs dist/ as it is.
 */
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
let tsc = null;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
} catch {
  // No compiler (production dependencies only): dist/ is what there is.
}
if (tsc !== null && existsSync(path.join(root, 'src'))) {
  // The compiler's messages go to stderr: stdout is the command's (--json).
  const build = spawnSync(process.execPath, [tsc, '-b', path.join(root, 'tsconfig.build.json')], {
    stdio: ['ignore', 2, 2],
  });
  if (build.status !== 0) {
    process.stderr.write('notification-receiver: the TypeScript build failed (above)\n');
    process.exit(build.status ?? 1);
  }
}
require(path.join(root, 'dist', 'cli', 'index.js')).main();
