#!/usr/bin/env bash
# build-registry.sh OUT DISTRIBUTION_VERSION
#
# Builds the OCI registry of the local super cluster into OUT/bin/registry: the CNCF Distribution registry
# (github.com/distribution/distribution/v3, its registry command), the reference implementation of the OCI distribution spec,
# with filesystem storage, TLS and htpasswd basic auth built in. It is a cache of its own (ensureRegistryToolchain in
# core/toolchain/registry.ts owns the key, the lock and the marker), so adding or changing it never rebuilds the
# Kubernetes or node toolchains. Same progress protocol as build.sh. Next to it, OUT/bin/htpasswd-bcrypt: a few lines
# of Go over golang.org/x/crypto/bcrypt (which the registry itself uses) that print the bcrypt hash of stdin, the only
# password format the registry's htpasswd auth reads; it saves a JavaScript bcrypt dependency for test users.
set -euo pipefail
OUT=${1:?out dir}; DV=${2:?distribution version}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOWORK=off
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work" "$OUT/bin"; cd "$work"
echo "::step compiling the Distribution registry $DV" >&2
# The registry's own cmd/registry links every storage driver (Azure, GCS, S3 and their SDKs: ~775 packages). This main
# runs the same command (registry.RootCmd: `registry serve CONFIG`) with what a local registry uses: filesystem and
# in-memory storage, htpasswd and token auth: 366 packages outside the standard library instead of 775.
M=github.com/distribution/distribution/v3
go mod init local/registry >/dev/null 2>&1
go mod edit -require=$M@"$DV"
mkdir -p cmd/registry
cat > cmd/registry/main.go <<GO
package main

import (
	"$M/registry"
	_ "$M/registry/auth/htpasswd"
	_ "$M/registry/auth/token"
	_ "$M/registry/storage/driver/filesystem"
	_ "$M/registry/storage/driver/inmemory"
)

func main() {
	// RootCmd exits non-zero itself when serving fails.
	_ = registry.RootCmd.Execute()
}
GO
mkdir -p cmd/htpasswd-bcrypt
cat > cmd/htpasswd-bcrypt/main.go <<'GO'
package main

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	pw, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && pw == "" {
		fmt.Fprintln(os.Stderr, "htpasswd-bcrypt: reading the password from stdin:", err)
		os.Exit(1)
	}
	if n := len(pw); n > 0 && pw[n-1] == '\n' {
		pw = pw[:n-1]
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		fmt.Fprintln(os.Stderr, "htpasswd-bcrypt:", err)
		os.Exit(1)
	}
	fmt.Println(string(h))
}
GO
go mod tidy
echo "::total $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/registry ./cmd/htpasswd-bcrypt | sort -u | grep -c .)" >&2
go build -v -ldflags="-s -w" -o "$OUT/bin/" ./cmd/registry ./cmd/htpasswd-bcrypt 2>&1 | sed -E 's/^([^ #]+)$/go: building \1/' >&2
cd "$OUT"; rm -rf "$work"
echo "::step done" >&2
