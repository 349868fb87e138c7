#!/usr/bin/env bash
# build.sh OUT_DIR K8S_VERSION ETCD_VERSION KWOK_VERSION
#
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from Go modules into
# OUT_DIR. Called by `vc toolchain build` (core/toolchain), which owns the cache key, the lock and the progress
# display; it can also be run by hand. Every package go compiles is printed on stderr as "go: building PKG" by
# `go build -v`, which the caller counts for progress.
#
# Kubernetes cannot be built with `go install k8s.io/kubernetes/cmd/...@vX`: its go.mod replaces every staging
# module (k8s.io/api, k8s.io/client-go, ...) with ./staging/..., which is ignored when it is a dependency, so we
# write a small wrapper module that pins each staging module to the matching v0.M.P tag. etcd's server module has
# replace lines too and gets its own wrapper; kwok gets a third so that its dependencies never move Kubernetes'.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}; EV=${3:?etcd version}; WV=${4:?kwok version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
minor=$(echo "$KV" | cut -d. -f2); SV="v0.${KV#v1.}"
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/k8s" "$work/etcd" "$work/kwok" "$OUT"

step() { echo "::step $*" >&2; }

step "resolving k8s.io/kubernetes@$KV"
cd "$work/k8s"
go mod init local/k8sbins >/dev/null 2>&1
go mod edit -go=1.26.0 -godebug=default=go1.26 -require=k8s.io/kubernetes@"$KV"
mod=$(go mod download -json k8s.io/kubernetes@"$KV" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
# Only the staging modules are required at v0.0.0; kube-openapi and utils carry real pseudo-versions.
for m in $(grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0(\s|$)' "$mod" | awk '{print $1}'); do
  go mod edit -replace="$m=$m@$SV"
done
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
step "downloading Kubernetes modules"
go mod tidy
X=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  X="$X -X $p.gitVersion=$KV -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
K8S_CMDS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl"
step "compiling kube-apiserver kube-controller-manager kube-scheduler kubectl"
echo "::total $(go list -deps -tags=selinux,notest,grpcnotrace $K8S_CMDS | wc -l)" >&2
go build -v -tags=selinux,notest,grpcnotrace -ldflags="-s -w$X" -o "$OUT/" \
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
