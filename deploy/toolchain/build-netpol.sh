#!/usr/bin/env bash
# build-netpol.sh OUT KUBE_ROUTER_VERSION
#
# Builds the NetworkPolicy enforcer of real nodes into OUT/bin/kube-router: kube-router
# (github.com/cloudnativelabs/kube-router/v2), run on a node in firewall-only mode (iptables + ipset). It is a cache
# of its own (ensureNetpolToolchain in core/toolchain/netpol.ts owns the key, the lock and the marker), so that adding
# or changing it never rebuilds the node toolchain. Same progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; KR=${2:?kube-router version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"; cd "$work"
echo "::step compiling kube-router $KR (NetworkPolicy enforcer)" >&2
P=github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
go mod init local/kube-router >/dev/null 2>&1
go mod edit -require=github.com/cloudnativelabs/kube-router/v2@"$KR"
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$P" > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$P" | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/" "$P" 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
