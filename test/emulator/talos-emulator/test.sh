#!/usr/bin/env bash
# The emulator tier in one command (npm run test:emulator): builds talosctl and the emulator once
# (build.sh, cached in .engine-tools/bin), runs the emulator's Go tests against Talos' own client and
# health-check code, then the smoke test that drives five emulated nodes with the real talosctl and
# the project's talosctl client. Needs Go; says so in one line and exits 3 without it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"

if ! command -v go >/dev/null 2>&1; then
  echo "test:emulator needs Go (go.mod's version, https://go.dev/dl/) to build talosctl and the Talos emulator; none on PATH" >&2
  exit 3
fi

start=$(date +%s)
"$here/build.sh" >/dev/null
echo "test.sh: tools ready in $(($(date +%s) - start)) s" >&2

start=$(date +%s)
(cd "$here" && nice -n 10 go vet ./... && nice -n 10 go test -count=1 ./...)
echo "test.sh: Go tests took $(($(date +%s) - start)) s" >&2

start=$(date +%s)
cd "$repo"
npx mocha --config test/emulator/mocharc.json
echo "test.sh: smoke test took $(($(date +%s) - start)) s" >&2
