#!/bin/sh
# scripts/install-deps.sh - installs what the project needs to build, test and
# benchmark, from Debian's packages. Runs apt-get as root (or through sudo);
# does nothing when everything is already there.
#   sh scripts/install-deps.sh        what make run / make test need
#   sh scripts/install-deps.sh deb    that, plus what make deb needs (debhelper, lintian)
set -e
PKGS="build-essential clang libclang-rt-14-dev liburing-dev libaio-dev valgrind fio gnuplot-nox groff-base plocate strace libsqlite3-dev sqlite3"
[ "${1:-}" = deb ] && PKGS="$PKGS debhelper dpkg-dev fakeroot lintian pkg-config man-db"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing
