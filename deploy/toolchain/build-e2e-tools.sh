#!/usr/bin/env bash
# build-e2e-tools.sh OUT
#
# Builds OUT/rootfs: the network tools the conformance specs run inside their Pods, from Debian's own packages and
# every package they depend on (apt-cache depends --recurse, no recommends), fetched with `apt-get download` and
# unpacked with dpkg-deb; the real programs, not stand-ins:
# - curl (Service, hostPort and lifecycle-hook specs: `curl -g -q -s --connect-timeout ...`) and netcat-openbsd
#   (`nc -v -u -w 2`), which upstream's agnhost image has from Alpine and busybox's applets do not match;
# - dig from bind9-dnsutils (the DNS specs' probes, in agnhost and in glibc-dns-testing) and getent from libc-bin
#   (the /etc/hosts probe of glibc-dns-testing, a Debian image upstream);
# - busybox, Debian's dynamically linked build, in place of the node toolchain's busybox-static: the specs run their
#   commands with `sh -c`, and the static build's shell runs its own applet for a name that is one (FEATURE_SH_STANDALONE
#   and PREFER_APPLETS: `type nc` says `nc is nc`) whatever the PATH holds, so `echo hostName | nc -v -t -w 2 svc 80`
#   ran busybox's nc, which has no -v, and every Service reachability check failed. This build looks names up in
#   the PATH, as the shell of upstream's Alpine-based image does.
# The conformance harness lays this tree over its agnhost and glibc-dns-testing images (test/conformance/images.ts).
# `nc` is linked in /usr/local/bin, ahead of busybox's /usr/bin/nc on the images' PATH. OUT/packages lists the
# packages and versions. Called by ensureE2eTools (test/conformance/e2e.ts), which owns the cache key, the lock and
# the progress display.
set -euo pipefail
OUT=${1:?out dir}
step() { echo "::step $*" >&2; }
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/debs" "$OUT/rootfs"
cd "$work/debs"
TOOLS=(curl bind9-dnsutils netcat-openbsd libc-bin busybox)
step "resolving the dependencies of ${TOOLS[*]}"
# Real packages only: the recursive listing also names virtual ones as <name>.
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${TOOLS[@]}" | grep -v -e '^ ' -e '^<' | sort -u)
step "downloading ${#pkgs[@]} Debian packages (apt-get download)"
# As root, apt's download sandbox user could not write here; the download is a plain file fetch either way.
apt_opts=(); [ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" download "${pkgs[@]}" >/dev/null
step "unpacking"
: > "$OUT/packages"
for d in ./*.deb; do
  dpkg-deb -x "$d" "$OUT/rootfs"
  echo "$(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)" >> "$OUT/packages"
done
r="$OUT/rootfs"
# documentation, and glibc's iconv modules (loaded on demand; no tool here converts character sets)
rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/info" "$r/usr/share/locale" "$r/usr/share/lintian" \
  "$r/usr/share/bug" "$r/usr/lib/x86_64-linux-gnu/gconv" "$r/etc/init.d" "$r/etc/logrotate.d" \
  "$r/usr/lib/systemd" "$r/lib/systemd"
mkdir -p "$r/usr/local/bin"
ln -sf /bin/nc.openbsd "$r/usr/local/bin/nc"
# Every library the programs need must be in the tree: fail the build rather than an image whose tools cannot start.
libs="$r/lib/x86_64-linux-gnu:$r/usr/lib/x86_64-linux-gnu"
for p in usr/bin/curl usr/bin/dig bin/nc.openbsd usr/bin/getent bin/busybox; do
  [ -x "$r/$p" ] || { echo "/$p is not in the unpacked packages" >&2; exit 1; }
  missing=$(LD_LIBRARY_PATH="$libs" ldd "$r/$p" | grep 'not found' || true)
  [ -z "$missing" ] || { echo "/$p needs libraries not in the tree: $missing" >&2; exit 1; }
done
rm -rf "$work"
step "done"
