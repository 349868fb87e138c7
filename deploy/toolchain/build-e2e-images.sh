#!/usr/bin/env bash
# build-e2e-images.sh OUT K8S_VERSION
#
# Builds the parts of the conformance run's images that the node toolchain lacks, from Go modules of the Kubernetes
# version:
# - OUT/sample-apiserver, the aggregated API server of the spec "Aggregator Should be able to support the 1.17 Sample
#   API Server", from the k8s.io/sample-apiserver module (v0.M.P for v1.M.P). Its go.mod pins real versions and
#   replaces nothing, so `go install module@version` builds it as published. Upstream's image
#   registry.k8s.io/e2e-test-images/sample-apiserver is this binary as /sample-apiserver.
# - OUT/agnhost/localhost.{crt,key}: the files upstream's agnhost image has at / (test/images/agnhost/porter of the
#   k8s.io/kubernetes module); the StatefulSet specs' readiness probe fetches /localhost.crt from test-webserver.
# - OUT/nonewprivs/nnp, upstream's test/images/nonewprivs program (prints its effective uid), built from the same
#   module; the image has it set-user-ID root, and "Security Context should not allow privilege escalation when
#   false" expects the uid it runs as, not 0.
# - OUT/nautilus/{nautilus.jpg,data.json}, the files upstream's nautilus image adds to agnhost (test/images/nautilus/
#   html), which the Kubectl "Update Demo" specs read through the Pod proxy.
# Called by ensureE2eImages (test/conformance/e2e.ts), which owns the cache key, the lock and the progress display.
# Same progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
step() { echo "::step $*" >&2; }
mkdir -p "$OUT/agnhost" "$OUT/nonewprivs" "$OUT/nautilus"
sv="v0.${KV#v1.}"; minor=$(echo "$KV" | cut -d. -f2)
X=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  X="$X -X $p.gitVersion=$KV -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
step "compiling k8s.io/sample-apiserver@$sv"
GOBIN="$OUT" go install -v -ldflags="-s -w$X" "k8s.io/sample-apiserver@$sv" 2>&1 | sed -u -E 's/^([^ #]+)$/go: building \1/' >&2
echo "$sv" > "$OUT/sample-apiserver.version"
step "copying agnhost's localhost certificate from k8s.io/kubernetes@$KV"
dir=$(go mod download -json "k8s.io/kubernetes@$KV" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
for f in localhost.crt localhost.key; do install -m 0644 "$dir/test/images/agnhost/porter/$f" "$OUT/agnhost/$f"; done
step "compiling test/images/nonewprivs of k8s.io/kubernetes@$KV"
# standard library only: built as a file list, outside any module
(cd "$OUT/nonewprivs" && go build -ldflags="-s -w" -o nnp "$dir/test/images/nonewprivs/nnp.go")
for f in nautilus.jpg data.json; do install -m 0644 "$dir/test/images/nautilus/html/$f" "$OUT/nautilus/$f"; done
step "done"
