#!/usr/bin/env bash
# build-capi.sh OUT CLUSTER_API_VERSION
#
# Builds the Cluster API core controller manager (sigs.k8s.io/cluster-api, its core/main.go: the Cluster, Machine,
# MachineSet, MachineDeployment, MachineHealthCheck and ClusterResourceSet controllers) into OUT/bin/capi-manager, and
# copies the module's CRDs (core/config/crd/bases) into OUT/crds. The build runs inside a copy of the module itself,
# so its own go.mod, go.sum and replace directive (the api submodule) decide every dependency, exactly as upstream
# builds its image. A cache of its own (ensureCapiToolchain in core/toolchain/capi.ts owns the key, the lock and the
# marker), keyed by the Cluster API version only. Same progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; CV=${2:?cluster-api version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
M=sigs.k8s.io/cluster-api
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin" "$OUT/crds"
echo "::step downloading $M $CV" >&2
src=$(cd "$work" && go mod download -json "$M@$CV" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "go mod download $M@$CV gave no directory" >&2; exit 1; }
cp -r "$src/." "$work/"; chmod -R u+w "$work"; cd "$work"
# The module's go.mod replaces its api submodule with ./api, a module of its own that the module zip leaves out: put
# the same tagged version of it there.
api=$(go mod download -json "$M/api@$CV" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$api" ] || { echo "go mod download $M/api@$CV gave no directory" >&2; exit 1; }
rm -rf api; cp -r "$api" api; chmod -R u+w api
cp core/config/crd/bases/*.yaml "$OUT/crds/"
echo "::step compiling the Cluster API core manager $CV" >&2
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./core | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/capi-manager" ./core 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
