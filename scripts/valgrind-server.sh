#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/valgrind-server.sh - runs simplefs_server under valgrind, for the CI
# valgrind pass (UR_SERVER points here; tests/run.sh sets it from
# TEST_UR_SERVER). Each server's report goes to $VG_LOGDIR/server.PID.log; an
# empty log means no error was found, and tests/run.sh fails a test whose
# servers logged errors (the server also exits 99 then, which the library may
# report only at unmount). VG_SERVER names the real server binary.
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--log-file="${VG_LOGDIR:?}/server.%p.log" "${VG_SERVER:?}" "$@"
