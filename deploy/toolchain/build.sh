#!/usr/bin/env bash
# build.sh OUT_DIR K8S_VERSION ETCD_VERSION KWOK_VERSION
#
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from Go modules into
# OUT_DIR. Called by `vc toolchain build` (core/toolchain), which owns the cache key, the lock and the progress
# display; it can also be run by hand. Every package go compiles is printed on stderr as "go: building PKG" by
# `go build -v`, which the caller counts for progress.
#
# The Kubernetes binaries come from a wrapper module (k8s-module.sh explains why); etcd's server module has
# replace lines too and gets its own wrapper; kwok gets a third so that its dependencies never move Kubernetes'.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}; EV=${3:?etcd version}; WV=${4:?kwok version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/k8s" "$work/etcd" "$work/kwok" "$OUT"

step() { echo "::step $*" >&2; }
# shellcheck source=k8s-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/k8s-module.sh"

K8S_CMDS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl"
# shellcheck disable=SC2086
k8s_module "$work/k8s" "$KV" $K8S_CMDS
step "compiling kube-apiserver kube-controller-manager kube-scheduler kubectl"
echo "::total $(go list -deps -tags=$K8S_TAGS -f '{{if not .Standard}}{{.ImportPath}}{{end}}' $K8S_CMDS | grep -c .)" >&2
go build -v -tags=$K8S_TAGS -ldflags="-s -w$K8S_X" -o "$OUT/" \
  $K8S_CMDS 2>&1 | sed 's/^/go: building /' >&2

step "compiling etcd $EV"
cd "$work/etcd"
go mod init local/etcdbin >/dev/null 2>&1
go mod edit -require=go.etcd.io/etcd/server/v3@"$EV"
printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' go.etcd.io/etcd/server/v3 | grep -c .)" >&2
EX="-X go.etcd.io/etcd/api/v3/version.GitSHA=$EV"
go build -v -ldflags="-s -w $EX" -o "$OUT/etcd" go.etcd.io/etcd/server/v3 2>&1 | sed 's/^/go: building /' >&2

step "compiling kwok $WV"
cd "$work/kwok"
go mod init local/kwokbin >/dev/null 2>&1
go mod edit -require=sigs.k8s.io/kwok@"$WV"
printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' sigs.k8s.io/kwok/cmd/kwok | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/kwok" sigs.k8s.io/kwok/cmd/kwok 2>&1 | sed 's/^/go: building /' >&2
# kwok needs Stage documents to move nodes and pods; ship the upstream ones next to the binary.
stages=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
mkdir -p "$OUT/kwok-stages"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  cp "$stages/$f" "$OUT/kwok-stages/$(basename "$f")"; chmod 644 "$OUT/kwok-stages/$(basename "$f")"
done
rm -rf "$work"
step "done"
