#!/usr/bin/env bash
# build-capi.sh OUT CLUSTER_API_VERSION [manager|clusterctl]
#
# manager (the default): builds the Cluster API core controller manager (sigs.k8s.io/cluster-api, its core/main.go:
# the Cluster, Machine, MachineSet, MachineDeployment, MachineHealthCheck and ClusterResourceSet controllers) into
# OUT/bin/capi-manager, and copies the module's CRDs (core/config/crd/bases) into OUT/crds.
# clusterctl: builds the module's cmd/clusterctl into OUT/bin/clusterctl, with the version stamped as upstream's
# release does (clusterctl version, and the version it compares providers' contracts with).
# The build runs inside a copy of the module itself, so its own go.mod, go.sum and replace directive (the api
# submodule) decide every dependency, exactly as upstream builds its image. Each target has a cache of its own
# (core/toolchain/capi.ts owns the keys, the lock and the marker), keyed by the Cluster API version only. Same
# progress protocol as build.sh.
set -euo pipefail
OUT=${1:?out dir}; CV=${2:?cluster-api version}; TARGET=${3:-manager}
case "$TARGET" in
  manager) pkg=./core bin=capi-manager what="the Cluster API core manager" ;;
  clusterctl) pkg=./cmd/clusterctl bin=clusterctl what=clusterctl ;;
  *) echo "build-capi.sh: unknown target $TARGET (manager or clusterctl)" >&2; exit 2 ;;
esac
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
M=sigs.k8s.io/cluster-api
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"
echo "::step downloading $M $CV" >&2
src=$(cd "$work" && go mod download -json "$M@$CV" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "go mod download $M@$CV gave no directory" >&2; exit 1; }
cp -r "$src/." "$work/"; chmod -R u+w "$work"; cd "$work"
# The module's go.mod replaces its api submodule with ./api, a module of its own that the module zip leaves out: put
# the same tagged version of it there.
api=$(go mod download -json "$M/api@$CV" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$api" ] || { echo "go mod download $M/api@$CV gave no directory" >&2; exit 1; }
rm -rf api; cp -r "$api" api; chmod -R u+w api
if [ "$TARGET" = manager ]; then mkdir -p "$OUT/crds"; cp core/config/crd/bases/*.yaml "$OUT/crds/"; fi
major=${CV#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
X=$M/version
ldflags="-s -w -X $X.gitVersion=$CV -X $X.gitMajor=$major -X $X.gitMinor=$minor -X $X.gitTreeState=clean"
echo "::step compiling $what $CV" >&2
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$pkg" | grep -c .)" >&2
go build -v -ldflags="$ldflags" -o "$OUT/bin/$bin" "$pkg" 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
