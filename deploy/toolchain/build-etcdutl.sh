#!/usr/bin/env bash
# build-etcdutl.sh OUT ETCD_VERSION
#
# Builds etcdutl (go.etcd.io/etcd/etcdutl/v3) into OUT/bin/etcdutl: the offline tool that turns an etcd snapshot into
# a fresh data directory (`etcdutl snapshot restore`), which a tenant restore needs and the etcd server cannot do by
# itself. A cache of its own (ensureEtcdutl in core/toolchain/etcdutl.ts owns the key, the lock and the marker), keyed
# by the etcd version only, so that adding it never rebuilds the control-plane toolchain. Same progress protocol as
# build.sh.
set -euo pipefail
OUT=${1:?out dir}; EV=${2:?etcd version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"; cd "$work"
echo "::step compiling etcdutl $EV (snapshot restore)" >&2
P=go.etcd.io/etcd/etcdutl/v3
go mod init local/etcdutl >/dev/null 2>&1
go mod edit -require="$P@$EV"
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$P" > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$P" | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/etcdutl" "$P" 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
