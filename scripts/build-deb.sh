#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/build-deb.sh - `make deb`: builds the Debian packages (debian/) with
# dpkg-buildpackage on a copy of the tree, so the tree's own build (./sfs,
# obj/) is left alone and nothing is written outside $O/deb; then runs lintian
# on the result and fails on any error.
#   O=DIR sh scripts/build-deb.sh     packages land in DIR/deb/ (default ./deb)
# Environment: DEB_BUILD_OPTIONS (nocheck: skip the test suite in the build).
# Must never: change the tree it is run from, or pass with a lintian error.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${O:-.}/deb" && cd "${O:-.}/deb" && pwd)
VER=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)
SRC="$OUT/urfs-$VER"
rm -rf "$OUT"/*
mkdir -p "$SRC"
# The tree's files: tracked and new ones (not the ignored build outputs).
if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$TOP" && git ls-files -c -o --exclude-standard | while IFS= read -r f; do
		if [ -e "$f" ]; then cp -P --parents "$f" "$SRC"; fi; done)
else
	(cd "$TOP" && tar --exclude=./obj --exclude='./build*' --exclude=./deb --exclude='*.sfs' -cf - .) |
		(cd "$SRC" && tar xf -)
fi
echo "build-deb: dpkg-buildpackage in $SRC"
(cd "$SRC" && dpkg-buildpackage -us -uc -b)
rm -rf "$SRC"
ls -l "$OUT"
CHANGES=$(ls "$OUT"/*.changes)
echo "build-deb: lintian $CHANGES"
lintian --fail-on error --info "$CHANGES"
echo "build-deb: packages in $OUT"
