#!/usr/bin/env bash
# Sourced by the install scripts: downloads one release file and checks it against the SHA-256 pinned
# in scripts/tool-checksums.txt before anything uses it.
set -euo pipefail

checksums="$(dirname "${BASH_SOURCE[0]}")/tool-checksums.txt"

# verified_download <url> <file name in tool-checksums.txt> <destination>
verified_download() {
  local url=$1 name=$2 dest=$3 want got
  want=$(awk -v n="$name" '$0 !~ /^#/ && $2 == n { print $1 }' "$checksums")
  if ! [[ $want =~ ^[0-9a-f]{64}$ ]]; then
    echo "error: no pinned SHA-256 for $name in scripts/tool-checksums.txt; add its line (see the file's header), then retry" >&2
    return 1
  fi
  curl --fail --silent --show-error --location --retry 3 --proto '=https' --output "$dest.part" "$url"
  got=$(sha256sum "$dest.part" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    rm -f "$dest.part"
    echo "error: $name has SHA-256 $got, scripts/tool-checksums.txt pins $want: refused" >&2
    return 1
  fi
  mv "$dest.part" "$dest"
}
