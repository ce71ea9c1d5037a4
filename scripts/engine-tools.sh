#!/usr/bin/env bash
# The engine tier's tools, built once and cached (docs/development.md, "Engine tier"):
#   pulumi                  the Pulumi CLI from the Go modules github.com/pulumi/pulumi/pkg/v3 and
#                           sdk/v3, at exactly the version of @pulumi/pulumi in package.json (an
#                           exact x.y.z there; nothing else is built);
#   pulumi-language-nodejs  the Node.js language host (test/engine/tools; Pulumi's own is a Go module
#                           the proxy does not serve);
#   pulumi-resource-talos   the Talos provider plugin, talos 0.8.1 (test/engine/tools: a stand-in on
#                           Talos' machinery module, since pulumiverse/pulumi-talos v0.8.1 and
#                           terraform-provider-talos v0.11.0 are not served either).
# Binaries the user already has win: a `pulumi` on PATH (with its language host beside it or on
# PATH) and the real plugin in ~/.pulumi/plugins/resource-talos-v0.8.1. ENGINE_TOOLS_BUILD=1 builds
# all three anyway.
#
# Cache: $ENGINE_TOOLS_DIR (default <repo>/.engine-tools, git-ignored): bin/ (put on PATH), plugins/
# (kept off PATH: the engine would take a plugin on PATH over the installed one), src/, home/ (the
# PULUMI_HOME of the engine tier, where the plugin is installed; never ~/.pulumi) and env.json
# (what was chosen, for the tests). Go builds use the machine's Go caches (GOCACHE, GOMODCACHE), and
# scripts/go-env.sh's module settings, whatever the caller's: the public proxy, every checksum
# checked against the Go checksum database, go.mod and go.sum never updated.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=go-env.sh
. "$repo/scripts/go-env.sh"
cache="${ENGINE_TOOLS_DIR:-$repo/.engine-tools}"
tools_src="$repo/test/engine/tools"
talos_version=0.8.1

say() { echo "engine-tools: $*" >&2; }

sdk_version="$(node -p 'require(process.argv[1]).dependencies["@pulumi/pulumi"]' "$repo/package.json")"
if ! [[ "$sdk_version" =~ ^3\.[0-9]+\.[0-9]+$ ]]; then
  echo "test:engine: package.json must pin @pulumi/pulumi to an exact 3.x.y (the Pulumi CLI is built at that version); got \"$sdk_version\"" >&2
  exit 5
fi
mkdir -p "$cache/bin" "$cache/plugins" "$cache/home/plugins" "$cache/src"

have_go=false
command -v go >/dev/null 2>&1 && have_go=true
force_build="${ENGINE_TOOLS_BUILD:-}"

# The user's own Pulumi CLI (not one of ours) and its language host.
user_pulumi=""
if [ -z "$force_build" ]; then
  while IFS= read -r candidate; do
    case "$candidate" in "$cache"/*) continue ;; esac
    user_pulumi="$candidate"
    break
  done < <(type -ap pulumi 2>/dev/null || true)
fi
user_langhost=""
if [ -n "$user_pulumi" ]; then
  if [ -x "$(dirname "$user_pulumi")/pulumi-language-nodejs" ]; then
    user_langhost="$(dirname "$user_pulumi")/pulumi-language-nodejs"
  elif command -v pulumi-language-nodejs >/dev/null 2>&1; then
    user_langhost="$(command -v pulumi-language-nodejs)"
  fi
fi
user_plugin=""
user_plugin_dir="${PULUMI_HOME:-$HOME/.pulumi}/plugins/resource-talos-v$talos_version"
if [ -z "$force_build" ] && [ -x "$user_plugin_dir/pulumi-resource-talos" ]; then
  user_plugin="$user_plugin_dir/pulumi-resource-talos"
fi

need_go=false
{ [ -z "$user_pulumi" ] || [ -z "$user_langhost" ] || [ -z "$user_plugin" ]; } && need_go=true
if $need_go && ! $have_go; then
  echo "test:engine needs Go (1.26+, to build the Pulumi CLI $sdk_version, its Node.js language host and the Talos provider plugin) or a Pulumi CLI on PATH with pulumi-language-nodejs and the talos v$talos_version plugin in ~/.pulumi/plugins; found neither" >&2
  exit 5
fi
# The lifecycle on emulated nodes needs talosctl and the node emulator, built from Go modules
# (test/emulator/talos-emulator/build.sh, run by the test), whichever Pulumi tools are used.
if ! $have_go; then
  echo "test:engine needs Go (1.26+) to build talosctl and the Talos node emulator (test/emulator/talos-emulator/build.sh), also with your own Pulumi CLI and talos plugin; found no go on PATH" >&2
  exit 5
fi

# Builds with a stamp: rebuilt only when what it is built from changes.
stamp_ok() { [ -x "$1" ] && [ -f "$1.stamp" ] && [ "$(cat "$1.stamp")" = "$2" ]; }
gobuild() { nice -n 10 go build -trimpath "$@"; }

# --- the Pulumi CLI ---------------------------------------------------------------------------
pulumi_bin="$cache/bin/pulumi"
pulumi_source="user"
if [ -n "$user_pulumi" ] && [ -n "$user_langhost" ]; then
  ln -sf "$user_pulumi" "$pulumi_bin"
  ln -sf "$user_langhost" "$cache/bin/pulumi-language-nodejs"
  pulumi_version="$("$user_pulumi" version | sed 's/^v//')"
else
  pulumi_source="built"
  # Exactly the SDK's version: the engine the tier tests is the one the SDK was released with.
  pulumi_version="$sdk_version"
  if ! stamp_ok "$pulumi_bin" "pulumi v$pulumi_version"; then
    say "building the Pulumi CLI v$pulumi_version from github.com/pulumi/pulumi/pkg/v3 (first time: several minutes)"
    start=$SECONDS
    # `go mod download` checks each zip against the checksum database (also a cached one) and
    # fails on a mismatch or a version the proxy does not serve; pkg's go.sum then covers its
    # dependencies (-mod=readonly: a missing or different checksum stops the build).
    module_dir() {
      local json
      json="$(go mod download -json "$1")" || {
        echo "test:engine: could not download $1 with a verified checksum: $(printf '%s' "$json" | node -e 'try{console.log(JSON.parse(require("fs").readFileSync(0,"utf8")).Error)}catch{console.log("see above")}')" >&2
        exit 5
      }
      printf '%s' "$json" | node -e 'const m=JSON.parse(require("fs").readFileSync(0,"utf8"));if(!m.Sum||!m.Dir)process.exit(1);console.log(m.Dir)'
    }
    pkg_dir="$(module_dir "github.com/pulumi/pulumi/pkg/v3@v$pulumi_version")"
    sdk_dir="$(module_dir "github.com/pulumi/pulumi/sdk/v3@v$pulumi_version")"
    # pkg's go.mod replaces the SDK with ../sdk (the repository layout): give it that layout.
    work="$cache/src/pulumi-v$pulumi_version"
    rm -rf "$work" && mkdir -p "$work"
    cp -R "$pkg_dir" "$work/pkg" && chmod -R u+w "$work/pkg"
    ln -s "$sdk_dir" "$work/sdk"
    rm -f "$pulumi_bin" "$pulumi_bin.stamp"
    (cd "$work/pkg" && gobuild -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$pulumi_version" -o "$pulumi_bin" ./cmd/pulumi)
    echo "pulumi v$pulumi_version" >"$pulumi_bin.stamp"
    rm -rf "$work"
    say "built the Pulumi CLI in $((SECONDS - start))s"
  fi
fi

# --- the project's tools module: language host and Talos provider ------------------------------
tools_hash="$(cd "$tools_src" && cat go.mod go.sum $(find . -name '*.go' | sort) | sha256sum | cut -c1-16)"
langhost_bin="$cache/bin/pulumi-language-nodejs"
if [ "$pulumi_source" = "built" ] && ! stamp_ok "$langhost_bin" "langhost $sdk_version $tools_hash"; then
  say "building pulumi-language-nodejs (test/engine/tools)"
  start=$SECONDS
  rm -f "$langhost_bin"
  (cd "$tools_src" && gobuild -ldflags "-X main.version=$sdk_version" -o "$langhost_bin" ./cmd/pulumi-language-nodejs)
  echo "langhost $sdk_version $tools_hash" >"$langhost_bin.stamp"
  say "built pulumi-language-nodejs in $((SECONDS - start))s"
fi

plugin_source="user"
plugin_bin="$user_plugin"
if [ -z "$user_plugin" ]; then
  plugin_source="stand-in"
  plugin_bin="$cache/plugins/pulumi-resource-talos"
  if ! stamp_ok "$plugin_bin" "talos $talos_version $tools_hash"; then
    say "building pulumi-resource-talos $talos_version (test/engine/tools, on Talos' machinery module)"
    start=$SECONDS
    rm -f "$plugin_bin"
    (cd "$tools_src" && gobuild -ldflags "-X main.version=$talos_version" -o "$plugin_bin" ./cmd/pulumi-resource-talos)
    echo "talos $talos_version $tools_hash" >"$plugin_bin.stamp"
    say "built pulumi-resource-talos in $((SECONDS - start))s"
  fi
fi

# Installed where the engine looks for `talos` 0.8.1, so it never tries to download it.
home="$cache/home"
installed="$home/plugins/resource-talos-v$talos_version/pulumi-resource-talos"
if ! cmp -s "$plugin_bin" "$installed" 2>/dev/null; then
  rm -rf "$home/plugins/resource-talos-v$talos_version" "$home/plugins/resource-talos-v$talos_version.lock"
  PULUMI_HOME="$home" PULUMI_SKIP_UPDATE_CHECK=true "$pulumi_bin" plugin install resource talos "v$talos_version" --file "$plugin_bin" >/dev/null
fi

node -e '
const [file, ...v] = process.argv.slice(1);
const [bin, home, pulumiVersion, pulumiSource, pluginSource, sdkVersion] = v;
require("fs").writeFileSync(file, JSON.stringify({ bin, home, pulumiVersion, pulumiSource, pluginSource, sdkVersion, talosVersion: "'"$talos_version"'" }, null, 2) + "\n");
' "$cache/env.json" "$cache/bin" "$home" "$pulumi_version" "$pulumi_source" "$plugin_source" "$sdk_version"
say "pulumi $pulumi_version ($pulumi_source), talos plugin $talos_version ($plugin_source); cache $(du -sh "$cache" | cut -f1) in $cache"
