#!/usr/bin/env bash
# Installs the Pulumi CLI of the @pulumi/pulumi SDK's version (linux-x64) into <dir>/pulumi, checked
# against its pinned SHA-256, and prints the folder to put on PATH. Usage: install-pulumi.sh <dir>
set -euo pipefail
dir=${1:?usage: install-pulumi.sh <dir>}
# shellcheck source=scripts/verified-download.sh
. "$(dirname "$0")/verified-download.sh"
version=$(node -p 'require("@pulumi/pulumi/version").version')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "error: unexpected SDK version $version" >&2; exit 1; }
file="pulumi-v${version}-linux-x64.tar.gz"
mkdir -p "$dir"
verified_download "https://github.com/pulumi/pulumi/releases/download/v${version}/${file}" "$file" "$dir/$file"
tar -xzf "$dir/$file" -C "$dir"
rm -f "$dir/$file"
echo "$dir/pulumi"
