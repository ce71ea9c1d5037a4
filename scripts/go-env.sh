# The Go environment of the engine tier's builds (sourced by scripts/engine-tools.sh and
# test/emulator/talos-emulator/build.sh): nothing of the caller's shell or `go env -w` file decides
# where modules come from or whether their checksums are checked. Modules come from the public
# module proxy only, and every one is checked against the Go checksum database (sum.golang.org,
# reached through the proxy's /sumdb/ endpoint where sum.golang.org itself does not resolve):
# a module the proxy serves with other content than the database's is refused, also one already in
# the module cache. Variables set here override the `go env -w` file. The caches (GOCACHE,
# GOMODCACHE) and the toolchain choice (GOTOOLCHAIN) stay the machine's.
export GOPROXY=https://proxy.golang.org
export GOSUMDB=sum.golang.org
# Exemptions from the proxy and the checksum database, and insecure fetches: none.
export GONOPROXY= GONOSUMDB= GOPRIVATE= GOINSECURE= GOVCS=
# go.mod and go.sum are never updated by a build (a missing checksum is an error); no VCS stamping
# (the builds run in copies of module zips and in this checkout alike).
export GOFLAGS="-mod=readonly -buildvcs=false"
# The module's own go.mod, never a go.work of a parent folder.
export GOWORK=off
# Not read by Go 1.26 (cmd/go has no such variables); cleared in case an older toolchain does.
unset GONOSUMCHECK GONOVERIFY
