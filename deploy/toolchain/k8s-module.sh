# k8s-module.sh — sourced by build.sh and build-node.sh (not run on its own).
#
# Kubernetes cannot be built with `go install k8s.io/kubernetes/cmd/...@vX`: its go.mod replaces every staging
# module (k8s.io/api, k8s.io/client-go, ...) with ./staging/..., which is ignored when it is a dependency, so
# k8s_module writes a small wrapper module that pins each staging module to the matching v0.M.P tag. Both toolchains
# use this one recipe so that the node's kubelet is built exactly like the control plane (and shares its Go cache).

# K8S_TAGS are the build tags of every Kubernetes binary we build.
K8S_TAGS=selinux,notest,grpcnotrace

# k8s_module DIR KV PKG... — creates the wrapper module in DIR (and cd's into it) importing PKG..., downloads its
# modules, and sets K8S_X to the -X ldflags that stamp the version into the binaries.
k8s_module() {
  local dir=$1 kv=$2; shift 2
  local minor sv mod m p
  minor=$(echo "$kv" | cut -d. -f2); sv="v0.${kv#v1.}"
  step "resolving k8s.io/kubernetes@$kv"
  mkdir -p "$dir"; cd "$dir"
  go mod init local/k8sbins >/dev/null 2>&1
  go mod edit -go=1.26.0 -godebug=default=go1.26 -require=k8s.io/kubernetes@"$kv"
  mod=$(go mod download -json k8s.io/kubernetes@"$kv" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  # Only the staging modules are required at v0.0.0; kube-openapi and utils carry real pseudo-versions.
  for m in $(grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0(\s|$)' "$mod" | awk '{print $1}'); do
    go mod edit -replace="$m=$m@$sv"
  done
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } > tools.go
  step "downloading Kubernetes modules"
  go mod tidy
  K8S_X=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    K8S_X="$K8S_X -X $p.gitVersion=$kv -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
  done
}
