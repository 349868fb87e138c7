#!/usr/bin/env bash
# build-k8s-minor.sh OUT K8S_VERSION
#
# Builds kube-apiserver and kube-controller-manager of a second, older Kubernetes minor (`kubernetesPrevious` in
# versions.json) into OUT/bin: the two binaries a tenant control plane runs of its Kubernetes version (etcd, the
# scheduler, kubectl and kwok stay those of the pinned toolchain). Upgrade tests and ClusterVersions that name that
# version need it; nothing else builds it. A cache of its own, keyed by that version (ensureKubernetesMinor in
# core/toolchain/minors.ts owns the key, the lock and the marker), so pinning it never rebuilds the main toolchain.
# Same wrapper module and build flags as build.sh (k8s-module.sh), same progress protocol.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/k8s" "$OUT/bin"

step() { echo "::step $*" >&2; }
# shellcheck source=k8s-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/k8s-module.sh"

CMDS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager"
# shellcheck disable=SC2086
k8s_module "$work/k8s" "$KV" $CMDS
step "compiling kube-apiserver kube-controller-manager $KV"
# shellcheck disable=SC2086
echo "::total $(go list -deps -tags=$K8S_TAGS -f '{{if not .Standard}}{{.ImportPath}}{{end}}' $CMDS | grep -c .)" >&2
# shellcheck disable=SC2086
go build -v -tags=$K8S_TAGS -ldflags="-s -w$K8S_X" -o "$OUT/bin/" $CMDS 2>&1 | sed 's/^/go: building /' >&2
cd "$OUT"; rm -rf "$work"
step "done"
