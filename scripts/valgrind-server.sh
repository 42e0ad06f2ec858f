#!/bin/sh
# scripts/valgrind-server.sh - runs simplefs_server under valgrind, for the CI
# valgrind pass (UR_SERVER points here). Each server's report goes to
# $VG_LOGDIR/server.PID.log; an empty log means no error was found.
# VG_SERVER names the real server binary.
exec valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
	--log-file="${VG_LOGDIR:-/tmp}/server.%p.log" "${VG_SERVER:?}" "$@"
