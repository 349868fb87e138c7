#!/usr/bin/env bash
# build-metrics-server.sh OUT METRICS_SERVER_VERSION
#
# Builds metrics-server (sigs.k8s.io/metrics-server) into OUT/bin/metrics-server: what a tenant runs to get
# `kubectl top` and HorizontalPodAutoscalers from the vn-agent's /metrics/resource. A cache of its own
# (ensureMetricsServer in core/toolchain/metricsserver.ts owns the key, the lock and the marker), built only when a
# test or a user asks for it. Same progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; MS=${2:?metrics-server version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"; cd "$work"
echo "::step compiling metrics-server $MS" >&2
P=sigs.k8s.io/metrics-server/cmd/metrics-server
go mod init local/metrics-server >/dev/null 2>&1
go mod edit -require=sigs.k8s.io/metrics-server@"$MS"
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$P" > tools.go
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$P" | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/" "$P" 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
