#!/usr/bin/env bash
# Builds, once, the two programs the emulator tier needs and caches them in the engine tier's
# git-ignored cache, .engine-tools/bin of the repository (ENGINE_TOOLS_DIR moves it, as for
# scripts/engine-tools.sh; ENGINE_BIN names the folder itself):
#   talosctl-<version>  talosctl from its Go module github.com/siderolabs/talos, at the version of the
#                       machinery module terraform-provider-talos v0.11.0 uses (v1.13.0); `talosctl`
#                       links to it
#   talos-emulator      the Talos node emulator in this folder
# Prints the paths as `TALOSCTL=…` and `TALOS_EMULATOR=…` lines on stdout; progress on stderr.
# Needs Go (go.mod's version) and the Go module proxy; every module is checked against the Go
# checksum database whatever the caller's GOFLAGS, GONOSUMDB or GOPROXY (scripts/go-env.sh).
set -euo pipefail

TALOS_VERSION=v1.13.0

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# The module proxy and checksum database settings of the engine tier, not the caller's.
# shellcheck source=../../../scripts/go-env.sh
. "$repo/scripts/go-env.sh"
if [ -n "${ENGINE_BIN:-}" ]; then
  bin="$ENGINE_BIN"
elif [ -n "${ENGINE_TOOLS_DIR:-}" ]; then
  bin="$ENGINE_TOOLS_DIR/bin"
else
  bin="$repo/.engine-tools/bin"
fi
mkdir -p "$bin"

say() { echo "build.sh: $*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: Go is required to build talosctl and the Talos emulator (https://go.dev/dl/); none on PATH" >&2
  exit 3
fi

# --- talosctl -----------------------------------------------------------------------------------
talosctl="$bin/talosctl-$TALOS_VERSION"
if [ -x "$talosctl" ] && "$talosctl" version --client --short 2>/dev/null | grep -q "Talos $TALOS_VERSION\$"; then
  say "talosctl $TALOS_VERSION cached at $talosctl"
else
  start=$(date +%s)
  say "building talosctl $TALOS_VERSION from github.com/siderolabs/talos (several minutes on 2 cores)"
  moddir=$(go mod download -json "github.com/siderolabs/talos@$TALOS_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$moddir" ] || { echo "build.sh: could not download github.com/siderolabs/talos@$TALOS_VERSION" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  cp -r "$moddir" "$work/src"
  chmod -R u+w "$work/src"
  cd "$work/src"
  export GOWORK=off # the module carries a go.work naming nested modules the zip leaves out
  # The main module's replace directives point machinery at ./pkg/machinery, a nested module that
  # the module zip leaves out: use the published machinery module of the same version instead. The
  # containerd replace points at a fork (containerd 2.2 plus a dead-code-elimination fix) that the
  # module proxy does not serve; talosctl uses the required upstream version instead.
  go mod edit -dropreplace=github.com/siderolabs/talos/pkg/machinery -dropreplace=github.com/containerd/containerd/v2
  go mod download -json "github.com/siderolabs/talos/pkg/machinery@$TALOS_VERSION" |
    sed -n 's/^\t"\(Sum\|GoModSum\)": "\(.*\)",\{0,1\}$/\1 \2/p' |
    while read -r kind sum; do
      case "$kind" in
        Sum) echo "github.com/siderolabs/talos/pkg/machinery $TALOS_VERSION $sum" ;;
        GoModSum) echo "github.com/siderolabs/talos/pkg/machinery $TALOS_VERSION/go.mod $sum" ;;
      esac
    done >>go.sum
  # -mod=mod: the edited go.mod needs checksums go.sum lacks, fetched and checked against the
  # checksum database like every other.
  GOFLAGS=-mod=mod nice -n 10 go build -trimpath -tags grpcnotrace -ldflags "-s -w" -o "$talosctl.tmp" ./cmd/talosctl
  mv "$talosctl.tmp" "$talosctl"
  cd "$repo"
  say "talosctl $TALOS_VERSION built in $(($(date +%s) - start)) s"
fi
ln -sf "$(basename "$talosctl")" "$bin/talosctl"

# --- the emulator --------------------------------------------------------------------------------
emulator="$bin/talos-emulator"
stamp="$emulator.sha256"
sources=$(cd "$here" && find . -name '*.go' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ -x "$emulator" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sources" ]; then
  say "talos-emulator cached at $emulator"
else
  start=$(date +%s)
  say "building talos-emulator"
  (cd "$here" && nice -n 10 go build -trimpath -ldflags "-s -w" -o "$emulator.tmp" ./cmd/talos-emulator)
  mv "$emulator.tmp" "$emulator"
  echo "$sources" >"$stamp"
  say "talos-emulator built in $(($(date +%s) - start)) s"
fi

echo "TALOSCTL=$bin/talosctl"
echo "TALOS_EMULATOR=$emulator"
