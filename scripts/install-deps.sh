#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/install-deps.sh - installs what the project needs to build, test and
# benchmark, from Debian's packages. Runs apt-get as root (or through sudo);
# does nothing when everything is already there.
#   sh scripts/install-deps.sh          what make run / make test need (with the
#                                       JDK and H2 for the Java binding's tests)
#   sh scripts/install-deps.sh deb      that, plus what make deb needs (debhelper, lintian)
#   sh scripts/install-deps.sh mariadb  that, plus mariadb-server and sysbench, for
#                                       test_dropin_mariadb and scripts/mariadb-sysbench.sh
# (arguments combine). mariadb-server is installed without starting a system-wide
# mysqld: a policy-rc.d that answers 101 is in place during the install (and removed
# after it if this script made it).
set -e
PKGS="build-essential clang libclang-rt-14-dev liburing-dev libaio-dev valgrind fio gnuplot-nox groff-base plocate qemu-utils strace libsqlite3-dev sqlite3 python3 openjdk-17-jdk-headless libh2-java"
for a in "$@"; do
	case $a in
	deb) PKGS="$PKGS debhelper dpkg-dev fakeroot lintian pkg-config man-db" ;;
	mariadb) PKGS="$PKGS mariadb-server sysbench" ;;
	*) echo "usage: sh scripts/install-deps.sh [deb] [mariadb]" >&2; exit 2 ;;
	esac
done
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
POLICY=""
case " $missing " in *" mariadb-server "*) [ ! -e /usr/sbin/policy-rc.d ] && POLICY=/usr/sbin/policy-rc.d ;; esac
if [ -n "$POLICY" ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee $POLICY >/dev/null
	$SUDO chmod 755 $POLICY
	trap '$SUDO rm -f $POLICY' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing
