# SPDX-License-Identifier: MIT
# scripts/deb-src.sh - sourced by the scripts that build a Debian source package
# at test time (liburing-tests.sh: liburing's tests; fio-syscalls.sh: fio's
# t/io_uring). Nothing of those packages is kept in the project.
# deb_source PKG DIR: `apt-get source PKG` into DIR (logs in DIR/../apt-*.log);
# where apt has no deb-src lines, first adds them (enable_deb_src) and runs
# apt-get update. 0, or 1 with the reason in DEB_SRC_WHY.
# enable_deb_src: adds deb-src entries beside every Debian "Types: deb" stanza
# (deb822) or "deb http://deb.debian.org..." line, in a file of its own, once.
# Must never: touch apt's own source files (only urfs-deb-src.sources is written).
DEB_SRC_SUDO=""
[ "$(id -u)" -ne 0 ] && DEB_SRC_SUDO=sudo
enable_deb_src() {
	local f=/etc/apt/sources.list.d/urfs-deb-src.sources
	[ -e "$f" ] && return 0
	local tmp
	tmp=$(mktemp) || return 1
	for s in /etc/apt/sources.list.d/*.sources; do
		[ -e "$s" ] || continue
		# Stanzas whose Types is exactly "deb" (one with deb-src already needs nothing).
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
		     /(^|\n)Types: deb(\n|$)/ && /URIs: [^\n]*debian/ { sub(/Types: deb/, "Types: deb-src"); print }' "$s" >> "$tmp"
	done
	for s in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -e "$s" ] || continue
		grep -E '^deb [^#]*debian' "$s" | while read -r _ rest; do
			# One-line format: write it as a deb822 stanza.
			set -- $rest
			case $1 in \[*) shift ;; esac
			printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n\n' "$1" "$2" "${*:3}"
		done >> "$tmp"
	done
	if [ ! -s "$tmp" ]; then rm -f "$tmp"; return 1; fi
	$DEB_SRC_SUDO install -m 644 "$tmp" "$f"; local r=$?
	rm -f "$tmp"
	return $r
}

deb_source() {
	local pkg=$1 dir=$2 logs
	logs=$(dirname "$dir")
	DEB_SRC_WHY=""
	command -v apt-get >/dev/null || { DEB_SRC_WHY="no apt-get: cannot fetch Debian's $pkg source package"; return 1; }
	command -v dpkg-source >/dev/null ||
		{ DEB_SRC_WHY="no dpkg-source (package dpkg-dev): cannot unpack $pkg's source package"; return 1; }
	mkdir -p "$dir" || { DEB_SRC_WHY="cannot create $dir"; return 1; }
	if ! (cd "$dir" && apt-get source --print-uris "$pkg" >/dev/null 2>&1); then
		enable_deb_src || { DEB_SRC_WHY="cannot add deb-src lines to apt's sources (root or sudo needed)"; return 1; }
		$DEB_SRC_SUDO apt-get update -qq >"$logs/apt-update.log" 2>&1 ||
			{ DEB_SRC_WHY="apt-get update failed: $(tail -n 1 "$logs/apt-update.log")"; return 1; }
	fi
	(cd "$dir" && timeout 600 apt-get source -qq "$pkg") >"$logs/apt-source.log" 2>&1 ||
		{ DEB_SRC_WHY="apt-get source $pkg failed: $(grep -v '^W:' "$logs/apt-source.log" | tail -n 1)"; return 1; }
}
