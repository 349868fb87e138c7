#!/usr/bin/env bash
# build-e2e.sh OUT K8S_VERSION
#
# Builds the upstream Kubernetes end-to-end test binary OUT/e2e.test (k8s.io/kubernetes/test/e2e, compiled with
# `go test -c` as upstream's hack/lib/golang.sh does, same build tags) and OUT/ginkgo, the Ginkgo CLI of the version
# the suite requires (it runs the specs in parallel processes), for `npm run conformance`. Called by
# ensureE2eBinary (test/conformance/e2e-binary.ts), which owns the cache key, the lock and the progress display;
# it can also be run by hand. Same progress protocol as build.sh: "::step", "::total N" and one "go: building PKG"
# line per compiled package on stderr.
#
# It uses the Kubernetes wrapper module recipe of the toolchains (k8s-module.sh), so it shares their module
# downloads and Go build cache.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/k8s" "$OUT"

step() { echo "::step $*" >&2; }
# shellcheck source=k8s-module.sh
. "$here/k8s-module.sh"

PKG=k8s.io/kubernetes/test/e2e
k8s_module "$work/k8s" "$KV" "$PKG"
# The suite's specs are registered by the imports of e2e_test.go, which `go mod tidy` does not follow for a
# dependency's tests: let the test build add their module sums.
export GOFLAGS="-trimpath -mod=mod"
step "compiling the e2e test packages of k8s.io/kubernetes@$KV"
deps=$(go list -deps -test -tags=$K8S_TAGS -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$PKG" | grep -v -e '\.test$' -e ' \[')
echo "::total $(echo "$deps" | grep -c .)" >&2
imports=$(go list -tags=$K8S_TAGS -f '{{join .TestImports "\n"}}' "$PKG" | grep -v -e '^testing$' -e '^flag$' -e '^fmt$' -e '^os$' -e '^path/filepath$')
# shellcheck disable=SC2086
go build -v -tags=$K8S_TAGS $imports 2>&1 | sed -u -E 's/^([^ #]+)$/go: building \1/' >&2
step "linking e2e.test"
go test -c -vet=off -tags=$K8S_TAGS -ldflags="-s -w$K8S_X" -o "$OUT/e2e.test" "$PKG"
step "compiling the Ginkgo CLI"
go build -ldflags="-s -w" -o "$OUT/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
rm -rf "$work"
step "done"
