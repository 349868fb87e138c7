#!/usr/bin/env bash
# build-seaweedfs.sh OUT SEAWEEDFS_VERSION
#
# Builds SeaweedFS (github.com/seaweedfs/seaweedfs, Apache-2.0) into OUT/bin/weed: the S3-compatible object store the
# backup tests run on loopback (`weed mini`: master, volume, filer and S3 gateway in one process), so the object-store
# backup destination is tested against a real server rather than an imitation. A cache of its own (ensureSeaweedfs in
# core/toolchain/seaweedfs.ts owns the key, the lock and the marker), keyed by its version only, so that it never
# rebuilds the Kubernetes toolchain. Same progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; SV=${2:?seaweedfs version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"; cd "$work"
echo "::step compiling SeaweedFS $SV (S3 gateway for backup tests)" >&2
P=github.com/seaweedfs/seaweedfs/weed
go mod init local/seaweedfs >/dev/null 2>&1
go mod edit -require="github.com/seaweedfs/seaweedfs@$SV"
# The one replace of SeaweedFS's own go.mod (a dependency's replaces are not applied to the module that requires it).
go mod edit -replace=github.com/tyler-smith/go-bip39=github.com/cosmos/go-bip39@v1.0.0
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$P" > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$P" | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/weed" "$P" 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
