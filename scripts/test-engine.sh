#!/usr/bin/env bash
# The engine tier (docs/development.md, "Engine tier"): checks Node, builds or finds the engine's
# tools, then runs the given engine test files, or every one (test/engine/**/*.engine.ts) when none
# is given: `npm run test:engine -- test/engine/lifecycle.engine.ts` runs that file alone. The glob
# stays out of test/engine/mocharc.json because Mocha adds a config's spec to the files named on
# the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/check-node.js
bash scripts/engine-tools.sh
[ $# -gt 0 ] || set -- "test/engine/**/*.engine.ts"
exec npx mocha --config test/engine/mocharc.json "$@"
