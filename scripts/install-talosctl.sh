#!/usr/bin/env bash
# Installs talosctl of a stack's Talos version (linux-amd64) as <dir>/talosctl, checked against its
# pinned SHA-256, and prints its path. Usage: install-talosctl.sh <env> <dir>
set -euo pipefail
env=${1:?usage: install-talosctl.sh <env> <dir>}
dir=${2:?usage: install-talosctl.sh <env> <dir>}
[[ $env =~ ^[a-z][a-z0-9-]{0,15}$ ]] || { echo "error: unexpected environment name $env" >&2; exit 1; }
# shellcheck source=scripts/verified-download.sh
. "$(dirname "$0")/verified-download.sh"
version=$(node -p "require('yaml').parse(require('fs').readFileSync('Pulumi.${env}.yaml', 'utf8')).config['talos-platform:cluster'].talosVersion")
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "error: unexpected talosVersion $version in Pulumi.${env}.yaml" >&2; exit 1; }
mkdir -p "$dir"
# The checksum list names each release file once, so the pin carries the version in its name.
verified_download "https://github.com/siderolabs/talos/releases/download/${version}/talosctl-linux-amd64" \
  "talosctl-linux-amd64@${version}" "$dir/talosctl"
chmod 0755 "$dir/talosctl"
echo "$dir/talosctl"
