#!/usr/bin/env bash
# build-node.sh OUT K8S CONTAINERD RUNC CNI COREDNS [GVISOR]
#
# Builds what a real node runs into OUT: bin/{pause,runc,containerd,containerd-shim-runc-v2,ctr,kubelet,kube-proxy,
# agnhost,coredns[,runsc,containerd-shim-runsc-v1]}, cni/{bridge,host-local,loopback,portmap}, and bin/busybox from
# Debian's busybox-static (its version in busybox.version). Called by `vc toolchain build --node`
# (ensureNodeToolchain in core/toolchain/node.ts), which owns the cache key, the lock, the image archives and the
# progress display; it can also be run by hand. Same progress protocol as build.sh: "::step", "::total N" and one
# "go: building PKG" line per compiled package on stderr, plus "::note TEXT" for what the user must see. Parts go
# cheapest first so that a broken host fails early.
#
# Every Go part is built in its own scratch module that requires the pinned version (nothing of upstream is
# committed). Everything is CGO_ENABLED=0 except pause (plain C) and runc (static cgo, for libseccomp). gVisor is
# optional: when it does not build, the reason is printed and the rest of the toolchain is still complete.
set -euo pipefail
OUT=${1:?out dir}; KV=${2:?kubernetes version}; CV=${3:?containerd version}; RV=${4:?runc version}
NV=${5:?cni plugins version}; DV=${6:?coredns version}; GV=${7:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
# The tag of the pause image (NODE_IMAGES.pause); pause.c prints it for `pause -v`.
PAUSE_VERSION=${PAUSE_VERSION:-3.10}
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin" "$OUT/cni"

step() { echo "::step $*" >&2; }
# progress turns `go build -v` output into "go: building PKG" lines; anything else (compiler errors) stays readable.
progress() { sed -E 's/^([^ #]+)$/go: building \1/' >&2; }
# shellcheck source=k8s-module.sh
. "$here/k8s-module.sh"

# gomod_build NAME OUTDIR TAGS LDFLAGS MODULE@VERSION PKG... — builds PKG... from a scratch module requiring
# MODULE@VERSION into OUTDIR, printing the progress protocol.
gomod_build() {
  local name=$1 outdir=$2 tags=$3 ldflags=$4 modver=$5; shift 5
  mkdir -p "$work/$name"; cd "$work/$name"
  go mod init "local/$name" >/dev/null 2>&1
  go mod edit -require="$modver"
  tools_go "$@"
  go mod tidy
  echo "::total $(go list -deps -tags="$tags" -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$@" | grep -c .)" >&2
  go build -v -tags="$tags" -ldflags="$ldflags" -o "$outdir/" "$@" 2>&1 | progress
}

tools_go() {
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } > tools.go
}

step "busybox (Debian busybox-static)"
mkdir -p "$work/busybox"; cd "$work/busybox"
# As root, apt's download sandbox user could not write here; the download is a plain file fetch either way.
apt_opts=(); [ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" download busybox-static >/dev/null
dpkg-deb -x busybox-static_*.deb root
install -m 0755 root/bin/busybox "$OUT/bin/busybox"
dpkg-deb -f busybox-static_*.deb Version > "$OUT/busybox.version"

step "compiling pause $PAUSE_VERSION (k8s.io/kubernetes@$KV build/pause)"
kdir=$(go mod download -json k8s.io/kubernetes@"$KV" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
gcc -Os -static -DVERSION="$PAUSE_VERSION" -o "$OUT/bin/pause" "$kdir/build/pause/linux/pause.c"
strip "$OUT/bin/pause"

step "compiling runc $RV (static, seccomp)"
[ -f /usr/include/seccomp.h ] || { echo "runc needs libseccomp-dev (apt-get install -y libseccomp-dev)" >&2; exit 1; }
CGO_ENABLED=1 gomod_build runc "$OUT/bin" "seccomp urfave_cli_no_docs netgo osusergo" \
  "-s -w -extldflags -static" github.com/opencontainers/runc@"$RV" github.com/opencontainers/runc

step "compiling CNI plugins $NV"
P=github.com/containernetworking/plugins/plugins
gomod_build cni "$OUT/cni" "" "-s -w" github.com/containernetworking/plugins@"$NV" \
  $P/main/bridge $P/ipam/host-local $P/main/loopback $P/meta/portmap

step "compiling containerd $CV"
C=github.com/containerd/containerd/v2
gomod_build containerd "$OUT/bin" "no_btrfs,no_devmapper,no_zfs" \
  "-s -w -X $C/version.Version=$CV -X $C/version.Package=github.com/containerd/containerd/v2" \
  $C@"$CV" $C/cmd/containerd $C/cmd/containerd-shim-runc-v2 $C/cmd/ctr

K8S_NODE="k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/test/images/agnhost"
# shellcheck disable=SC2086
k8s_module "$work/k8s" "$KV" $K8S_NODE
step "compiling kubelet kube-proxy agnhost"
# shellcheck disable=SC2086
echo "::total $(go list -deps -tags=$K8S_TAGS -f '{{if not .Standard}}{{.ImportPath}}{{end}}' $K8S_NODE | grep -c .)" >&2
# shellcheck disable=SC2086
go build -v -tags=$K8S_TAGS -ldflags="-s -w$K8S_X" -o "$OUT/bin/" $K8S_NODE 2>&1 | progress

step "compiling CoreDNS $DV"
gomod_build coredns "$OUT/bin" "" "-s -w" github.com/coredns/coredns@"$DV" github.com/coredns/coredns

# gVisor's shim hard-codes oomScoreMax = -999 for itself, which fails without CAP_SYS_RESOURCE; the shim's own OOM
# score is cosmetic, so it is built from a writable copy of the module with that one constant set to 0.
build_gvisor() {
  local json src
  mkdir -p "$work/gvisor"; cd "$work/gvisor"
  json=$(go mod download -json gvisor.dev/gvisor@"$GV") || {
    echo "$json" | sed -n 's/.*"Error": "\(.*\)".*/\1/p' >&2
    return 1
  }
  src=$(echo "$json" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp -r "$src" gvisor-src; chmod -R u+w gvisor-src
  grep -q '^\s*oomScoreMax = -999$' gvisor-src/pkg/shim/v1/manager.go || {
    echo "'oomScoreMax = -999' is not in pkg/shim/v1/manager.go any more: the shim patch needs updating" >&2
    return 1
  }
  sed -i 's/^\(\s*\)oomScoreMax = -999$/\1oomScoreMax = 0/' gvisor-src/pkg/shim/v1/manager.go
  go mod init local/gvisor >/dev/null 2>&1
  go mod edit -require=gvisor.dev/gvisor@"$GV" -replace=gvisor.dev/gvisor=./gvisor-src
  tools_go gvisor.dev/gvisor/runsc gvisor.dev/gvisor/shim
  go mod tidy
  echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' gvisor.dev/gvisor/runsc gvisor.dev/gvisor/shim | grep -c .)" >&2
  mkdir -p out
  go build -v -ldflags="-s -w" -o out/ gvisor.dev/gvisor/runsc gvisor.dev/gvisor/shim 2>&1 | progress
  install -m 0755 out/runsc "$OUT/bin/runsc"
  install -m 0755 out/shim "$OUT/bin/containerd-shim-runsc-v1"
}
if [ -n "$GV" ]; then
  step "compiling gVisor runsc and shim $GV (optional)"
  # A background subshell keeps `set -e` in force inside build_gvisor (an `if` around it would switch it off); its
  # stderr is also kept so the reason of a failure can be shown (::note lines reach the user even on success).
  (build_gvisor) 2> >(tee "$work/gvisor.log" >&2) &
  if ! wait $!; then
    sleep 0.5
    echo "::note gVisor did not build, so the node toolchain has no runsc runtime handler; the reason:" >&2
    grep -v -e '^go: building ' -e '^go: downloading ' -e '^::' "$work/gvisor.log" | tail -n 8 | sed 's/^/::note   /' >&2 || true
    rm -f "$OUT/bin/runsc" "$OUT/bin/containerd-shim-runsc-v1"
  fi
fi
cd "$OUT"
rm -rf "$work"
step "done"
