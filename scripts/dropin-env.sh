# SPDX-License-Identifier: MIT
# scripts/dropin-env.sh - sourced by the scripts that run programs against the
# liburing drop-in (liburing-tests.sh, plocate-dropin.sh).
# dropin_env DIR: prints the environment assignments (for env) that a program
# needs besides LD_LIBRARY_PATH=DIR to load DIR/liburing.so.2: nothing for a
# plain build; for a sanitizer build (make SANITIZE=1) the ASan runtime the
# library links, preloaded, since the programs themselves are not sanitized, and
# no leak report (the programs' own leaks are not the library's) and no SIGSEGV
# handler (syzkaller's reproducers among liburing's tests catch their own
# faults; a fault of the library still kills the program: a CRASH).
# Must never: print anything for a library that does not link the ASan runtime.
dropin_env() {
	local rt
	rt=$(ldd "$1/liburing.so.2" 2>/dev/null | awk '/libasan\.so/ { print $3 }')
	[ -n "$rt" ] && echo "LD_PRELOAD=$rt ASAN_OPTIONS=detect_leaks=0:handle_segv=0"
	return 0
}
