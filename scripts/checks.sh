#!/usr/bin/env bash
# npm test's checks before the tests, all at once: ESLint (type-aware: the longest), the type check (tsc -b, which
# also builds dist/ for the tests), and Prettier then dependency-cruiser. Each one's output is held and printed when
# it ends, in that order; the script fails when any of them failed. On two cores that takes about as long as ESLint
# alone rather than the sum of the four (CONTRIBUTING.md, "Test"). `npm run lint` runs the same three one after
# another.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

npm run --silent lint:eslint >"$out/eslint" 2>&1 &
eslint=$!
npm run --silent typecheck >"$out/typecheck" 2>&1 &
typecheck=$!
{ npm run --silent lint:format && npm run --silent lint:imports; } >"$out/format" 2>&1 &
format=$!

failed=0
for check in eslint typecheck format; do
  wait "${!check}" || failed=1
  cat "$out/$check"
done
exit "$failed"
