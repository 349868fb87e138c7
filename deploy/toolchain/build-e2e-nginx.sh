#!/usr/bin/env bash
# build-e2e-nginx.sh OUT
#
# Builds OUT/rootfs: the root file system of an nginx image for the conformance run, from Debian's own packages
# (nginx, nginx-common and the shared libraries the nginx binary links: libc6, libcrypt1, libpcre2-8-0, libssl3,
# zlib1g), fetched with `apt-get download` and unpacked with dpkg-deb; the real nginx binary, not a stand-in. The
# upstream e2e images registry.k8s.io/e2e-test-images/nginx:* are nginx serving its default page on port 80 with the
# logs on stdout and stderr; this root file system does the same with Debian's nginx version (OUT/nginx.version).
# Called by ensureE2eNginx (test/conformance/e2e.ts), which owns the cache key, the lock and the progress display.
set -euo pipefail
OUT=${1:?out dir}
step() { echo "::step $*" >&2; }
work="$OUT.work"; rm -rf "$work"; mkdir -p "$work/debs" "$OUT/rootfs"
cd "$work/debs"
step "downloading Debian nginx and its libraries (apt-get download)"
# As root, apt's download sandbox user could not write here; the download is a plain file fetch either way.
apt_opts=(); [ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" download nginx nginx-common libc6 libcrypt1 libpcre2-8-0 libssl3 zlib1g >/dev/null
step "unpacking"
for d in ./*.deb; do dpkg-deb -x "$d" "$OUT/rootfs"; done
dpkg-deb -f nginx_*.deb Version > "$OUT/nginx.version"
r="$OUT/rootfs"
rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/locale" "$r/usr/share/lintian" "$r/etc/init.d" \
  "$r/etc/logrotate.d" "$r/etc/ufw" "$r/usr/lib/systemd" "$r/lib/systemd"
# Every library the binary needs must be in the image: fail the build rather than an image that cannot start.
missing=$(LD_LIBRARY_PATH="$r/lib/x86_64-linux-gnu:$r/usr/lib/x86_64-linux-gnu" ldd "$r/usr/sbin/nginx" \
  | grep 'not found' || true)
[ -z "$missing" ] || { echo "nginx needs libraries not in the image: $missing" >&2; exit 1; }
printf 'root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n' > "$r/etc/passwd"
printf 'root:x:0:\nwww-data:x:33:\n' > "$r/etc/group"
mkdir -p "$r/var/log/nginx" "$r/var/lib/nginx" "$r/run" "$r/tmp"
ln -sf /dev/stdout "$r/var/log/nginx/access.log"
ln -sf /dev/stderr "$r/var/log/nginx/error.log"
# Debian's postinst enables the default site (port 80, /var/www/html), which shows nginx's own page as upstream's does.
ln -sf /etc/nginx/sites-available/default "$r/etc/nginx/sites-enabled/default"
mkdir -p "$r/var/www/html"
cp "$r/usr/share/nginx/html/index.html" "$r/var/www/html/index.nginx-debian.html"
rm -rf "$work"
step "done"
