#!/usr/bin/env bash
# Lints the GitHub workflows with actionlint (a Go module) and zizmor (PyPI, offline audits), each at
# an exact version, installed on first use into .ci/.lint-tools/ (git-ignored) and reused after.
# Fails on any finding. Run from anywhere: scripts/lint-workflows.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ACTIONLINT_VERSION=v1.7.12
ZIZMOR_VERSION=1.32.0
tools=.ci/.lint-tools

actionlint="$tools/actionlint-$ACTIONLINT_VERSION/actionlint"
if [ ! -x "$actionlint" ]; then
  command -v go >/dev/null || { echo "lint-workflows: Go is needed to install actionlint" >&2; exit 1; }
  echo "lint-workflows: installing actionlint $ACTIONLINT_VERSION (Go module, checked against the checksum database)"
  # A clean environment: no caller's GOFLAGS, GOPROXY or GONOSUMDB turns the checks off.
  env -u GOFLAGS -u GONOSUMDB -u GONOSUMCHECK -u GOINSECURE -u GOPRIVATE -u GONOPROXY \
    GOBIN="$PWD/$tools/actionlint-$ACTIONLINT_VERSION" GOTOOLCHAIN=local \
    go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi

zizmor="$tools/zizmor-$ZIZMOR_VERSION/bin/zizmor"
if [ ! -x "$zizmor" ]; then
  echo "lint-workflows: installing zizmor $ZIZMOR_VERSION (PyPI)"
  python3 -m venv "$tools/zizmor-$ZIZMOR_VERSION"
  "$tools/zizmor-$ZIZMOR_VERSION/bin/pip" install --quiet --disable-pip-version-check "zizmor==$ZIZMOR_VERSION"
fi

"$actionlint" -config-file .github/actionlint.yaml -shellcheck= -pyflakes=
# Offline: no audit that asks GitHub's API (the linter runs without network or token).
"$zizmor" --offline --no-progress --persona=regular .github/workflows
echo "lint-workflows: actionlint $ACTIONLINT_VERSION and zizmor $ZIZMOR_VERSION found nothing"
