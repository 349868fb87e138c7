#!/usr/bin/env bash
# build-e2e-sample-apiserver.sh OUT K8S_VERSION
#
# Builds OUT/sample-apiserver, the aggregated API server of the conformance spec "Aggregator Should be able to support
# the 1.17 Sample API Server", from the k8s.io/sample-apiserver Go module of the Kubernetes version (v0.M.P for
# v1.M.P). Its go.mod pins real versions and replaces nothing, so `go install module@version` builds it as published.
# Upstream's image registry.k8s.io/e2e-test-images/sample-apiserver is this binary as /sample-apiserver on a base
# image; the conformance run makes the same image from it. Called by ensureE2eSampleApiserver
# (test/conformance/e2e.ts), which owns the cache key, the lock and the progress display. Same progress protocol as
# build.sh.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
step() { echo "::step $*" >&2; }
mkdir -p "$OUT"
sv="v0.${KV#v1.}"; minor=$(echo "$KV" | cut -d. -f2)
X=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  X="$X -X $p.gitVersion=$KV -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
step "compiling k8s.io/sample-apiserver@$sv"
GOBIN="$OUT" go install -v -ldflags="-s -w$X" "k8s.io/sample-apiserver@$sv" 2>&1 | sed -u -E 's/^([^ #]+)$/go: building \1/' >&2
echo "$sv" > "$OUT/sample-apiserver.version"
step "done"
