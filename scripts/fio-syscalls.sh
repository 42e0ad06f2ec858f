#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/fio-syscalls.sh - fio is the judge of the system-call front (issue 30):
# Debian's fio, whose io_uring engine makes the io_uring system calls itself and
# maps the ring with its own mmap, runs every job as
#   $O/noring $O/urfs-uring --syscalls fio --ioengine=io_uring ...
# (the kernel's io_uring refused as Docker refuses it; the front traps the calls
# and serves them from the emulated ring).
#
#   scripts/fio-syscalls.sh [options] [MODE]
#   MODE (default --matrix):
#   --matrix      randread, randwrite, randrw x buffered, --direct=1 x bs 4k, 128k
#                 x iodepth 1, 32, 128; then each of --fixedbufs, --registerfiles,
#                 --sqthread_poll=1 and --nonvectored=1 over the three patterns,
#                 buffered and direct, at 4k iodepth 32
#   --quick       a short subset (tests/test_dropin_fio.c): randrw 4k iodepth 32
#                 buffered and direct, randread --fixedbufs --registerfiles, one
#                 --sqthread_poll=1 and one --nonvectored=1 (these direct, with
#                 writes); a job has 60 s (else 300 s)
#   --bench       side by side, interleaved, REPEAT times: fio io_uring through the
#                 front under noring; fio libaio (O_DIRECT) and psync (buffered)
#                 under the same noring; the kernel's io_uring without noring.
#                 4k random reads of a 64 MiB file, --direct=1 and buffered (warm,
#                 --invalidate=0), iodepth 1 and 32, and 32 in batches (fio's default
#                 submits each I/O with its own io_uring_enter: a trap each under the
#                 front; "batch 32": --iodepth_batch_submit=32
#                 --iodepth_batch_complete_min=1 --iodepth_batch_complete_max=32,
#                 as scripts/fio-check.sh runs). Prints IOPS medians, the
#                 issue's ratios and the trapped io_uring_enter's cost
#                 ($O/obj/progs/trap_cost, tests/progs/trap_cost.c)
#   --t-io-uring  fio's t/io_uring, built from Debian's fio source package (apt-get
#                 source fio, deb-src lines added as scripts/liburing-tests.sh adds
#                 them; the build is cached in -B DIR), through the front on a file:
#                 plain (-p0 -B0 -F0 -X0), -F1, -B1, -X1 (registered ring: the
#                 front refuses IORING_REGISTER_RING_FDS, t/io_uring goes on
#                 without), -O0 (buffered), -d1, -p1 (IOPOLL), -N1 (no-ops), -S1
#                 (preadv2, no ring). A run passes on exit 0, a "Maximum IOPS"
#                 above 0 and no "unexpected ret". The kernel's ring runs the same
#                 without noring, for comparison (not checked)
#   options:
#   -N PATH   the noring launcher (default $O/noring; O defaults to .)
#   -U PATH   urfs-uring (default $O/urfs-uring)
#   -W DIR    work folder for the files and fio's output (default: a new one under
#             ${TMPDIR:-/tmp}, removed at the end)
#   -B DIR    --t-io-uring's build folder (default $O/fio-src)
#   -r N      --bench: rounds (default 3); -s SECS: seconds a run (default 2)
#   -h        this text
#
# A job passes when fio exits 0, every entry of jobs[] in its JSON output has
# error 0, it did I/O, and a job that writes with --verify=crc32c read the data
# back (do_verify: its read bytes, the verify's with randrw's own, at least its
# written bytes). A table, then "N passed, N failed, N skipped" and PASS or
# FAIL. Exit 1 on any failure, 77 (with the reason) when fio or jq is missing or
# the front cannot run here; a --direct=1 job where the work folder refuses
# O_DIRECT is a skip, said. Under a sanitizer build (make SANITIZE=1) the ASan
# runtime goes in LD_PRELOAD and ASan's link-order check is off (urfs-uring puts
# the drop-in first). Must never: pass a job that did not run under noring with
# the front (each mode first checks that fio's io_uring engine fails under noring
# alone), or count a skip as a pass.
set -u
O=${O:-.}
HERE=$(cd "$(dirname "$0")" && pwd)
NORING=$O/noring
URFS=$O/urfs-uring
WORK=""
FIOSRC=$O/fio-src
REPEAT=3
SECS=2
MODE=matrix
JOB_TIMEOUT=300
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--matrix|--quick|--bench|--t-io-uring) MODE=${1#--} ;;
	-N) NORING=$2; shift ;;
	-U) URFS=$2; shift ;;
	-W) WORK=$2; shift ;;
	-B) FIOSRC=$2; shift ;;
	-r) REPEAT=$2; shift ;;
	-s) SECS=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

skip() { echo "fio-syscalls: SKIP: $*"; exit 77; }
fail() { echo "fio-syscalls: FAIL: $*"; exit 1; }

command -v fio >/dev/null || skip "fio is not installed (scripts/install-deps.sh installs it)"
command -v jq >/dev/null || skip "jq is not installed"
[ -x "$NORING" ] || skip "no noring launcher at $NORING (make builds it)"
[ -x "$URFS" ] || skip "no urfs-uring at $URFS (make builds it)"
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
NORING=$(abs "$NORING"); URFS=$(abs "$URFS"); FIOSRC=$(abs "$FIOSRC"); O=$(abs "$O")
DROPIN=$(dirname "$URFS")/uring
[ -f "$DROPIN/liburfs_syscalls.so" ] || skip "no $DROPIN/liburfs_syscalls.so (make builds it)"
. "$HERE/dropin-env.sh"
# A sanitizer build: the ASan runtime must be loaded, and urfs-uring puts its two
# libraries before the caller's LD_PRELOAD, so ASan's "runtime comes first" check is off.
ASANENV=$(dropin_env "$DROPIN")
[ -n "$ASANENV" ] && ASANENV="$ASANENV:verify_asan_link_order=0"

if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/fio-syscalls.XXXXXX") || fail "mktemp"
	trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK" || fail "mkdir $WORK"
WORK=$(abs "$WORK")
cd "$WORK" || fail "cd $WORK"   # fio writes its verify state files in the current folder

# How a program runs: front (noring + urfs-uring --syscalls), noring (the filter
# alone), kernel (nothing: the kernel's io_uring where it works).
runner() {
	case $1 in
	front) echo "env $ASANENV $NORING $URFS --syscalls" ;;
	noring) echo "$NORING" ;;
	kernel) echo "" ;;
	esac
}

ODIRECT=1
probe=$WORK/.odirect-probe
if ! dd if=/dev/zero of="$probe" bs=4k count=1 oflag=direct 2>/dev/null; then
	ODIRECT=0
	echo "fio-syscalls: $WORK refuses O_DIRECT: the --direct=1 jobs are skipped"
fi
rm -f "$probe"

PASSED=0; FAILED=0; SKIPPED=0
# fio_run SETUP NAME OUT FIO-ARGS...: one fio job; its JSON in OUT, its stderr in OUT.err.
fio_run() {
	local setup=$1 name=$2 out=$3
	shift 3
	# shellcheck disable=SC2046
	timeout -k 10 "$JOB_TIMEOUT" $(runner "$setup") fio --name="$name" --filename="$WORK/$name.dat" \
		--output-format=json --output="$out" "$@" 2>"$out.err"
	local st=$?
	[ $st = 124 ] || [ $st = 137 ] && end_left "$WORK/$name.dat"
	return $st
}

# end_left FILE: ends the processes that still hold FILE open (a job process of a fio
# that timeout ended: fio's job processes leave its process group).
end_left() {
	local p
	for p in $(find /proc/[0-9]*/fd -lname "$1" 2>/dev/null | sed -n 's#^/proc/\([0-9]*\)/.*#\1#p' | sort -u); do
		echo "fio-syscalls: ending $p, left holding $1: $(tr '\0' ' ' < /proc/"$p"/cmdline | cut -c1-60)" >&2
		kill -9 "$p" 2>/dev/null
	done
}

# check OUT STATUS RW: "ok" or what is wrong with the job whose JSON is OUT.
check() {
	local out=$1 st=$2 rw=$3
	if [ "$st" != 0 ]; then
		echo "fio exit $st, error $(jq -r '[.jobs[].error] | map(tostring) | join(",")' "$out" 2>/dev/null)" \
			"$(grep '[^[:space:]]' "$out.err" | tail -n 1)"
		return
	fi
	jq -r --arg rw "$rw" '
		if (.jobs | length) == 0 then "no jobs in the output"
		elif any(.jobs[]; .error != 0) then "error \([.jobs[].error] | map(tostring) | join(","))"
		else ([.jobs[].read.io_bytes] | add) as $r | ([.jobs[].write.io_bytes] | add) as $w |
			if $r + $w == 0 then "no I/O done"
			elif $rw != "randread" and $r < $w then "verify read \($r) of \($w) bytes written"
			else "ok" end
		end' "$out" 2>/dev/null || echo "no JSON output: $(grep -v '^$' "$out.err" | tail -n 1)"
}

# job NAME RW DIRECT BS IODEPTH [FIO-ARGS...]: one row of the matrix through the front.
job() {
	local name=$1 rw=$2 direct=$3 bs=$4 qd=$5
	shift 5
	if [ "$direct" = 1 ] && [ "$ODIRECT" = 0 ]; then
		printf '| %-40s | %-49s |\n' "$name" "SKIP (no O_DIRECT in $WORK)"
		SKIPPED=$((SKIPPED + 1))
		return
	fi
	local args=(--ioengine=io_uring --rw="$rw" --direct="$direct" --bs="$bs" --iodepth="$qd")
	if [ "$rw" = randread ]; then
		args+=(--size=16m --time_based --runtime=1)
	else
		# verify needs a write pass that ends: 8 MiB written once, then read back
		args+=(--size=8m --verify=crc32c --do_verify=1 --verify_fatal=1)
	fi
	local out=$WORK/$name.json st
	fio_run front "$name" "$out" "${args[@]}" "$@"
	st=$?
	local why r w
	why=$(check "$out" "$st" "$rw")
	r=$(jq '[.jobs[].read.io_bytes] | add / 1048576' "$out" 2>/dev/null || echo 0)
	w=$(jq '[.jobs[].write.io_bytes] | add / 1048576' "$out" 2>/dev/null || echo 0)
	if [ "$why" = ok ]; then
		PASSED=$((PASSED + 1))
		printf '| %-40s | %8.1f | %8.1f | %-27s |\n' "$name" "$r" "$w" PASS
	else
		FAILED=$((FAILED + 1))
		printf '| %-40s | %8.1f | %8.1f | FAIL: %s\n' "$name" "$r" "$w" "$why"
		sed 's/^/    /' "$out.err" | tail -n 5
	fi
	rm -f "$WORK/$name.dat"
}

# The filter alone refuses fio's io_uring engine (so a pass below is the front's),
# and the front starts in this process tree.
precheck() {
	local out=$WORK/precheck.json st
	fio_run noring precheck "$out" --ioengine=io_uring --rw=randread --size=1m --bs=4k
	st=$?
	[ "$st" != 0 ] || [ "$(jq '[.jobs[].error] | max' "$out" 2>/dev/null)" != 0 ] ||
		fail "fio's io_uring engine works under noring alone: the filter does not block io_uring"
	rm -f "$WORK/precheck.dat"
}

table_head() {
	printf '| %-40s | %8s | %8s | %-27s |\n' job "read MiB" "wrt MiB" result
	printf '|%s|%s|%s|%s|\n' ------------------------------------------ ---------- ---------- -----------------------------
}

summary() {
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	if [ "$FAILED" -gt 0 ]; then echo "FAIL"; exit 1; fi
	[ "$PASSED" -gt 0 ] || skip "no job could run here"
	echo "PASS"
	exit 0
}

matrix() {
	echo "fio $(fio --version) --ioengine=io_uring under noring through urfs-uring --syscalls; files in $WORK"
	table_head
	local rw d bs qd v
	for rw in randread randwrite randrw; do
		for d in 0 1; do
			for bs in 4k 128k; do
				for qd in 1 32 128; do
					job "$rw-d$d-$bs-qd$qd" $rw $d $bs $qd
				done
			done
		done
	done
	for v in fixedbufs registerfiles sqthread_poll=1 nonvectored=1; do
		for rw in randread randwrite randrw; do
			for d in 0 1; do
				job "$rw-d$d-4k-qd32-${v%=1}" $rw $d 4k 32 --"$v"
			done
		done
	done
	summary
}

quick() {
	echo "fio $(fio --version) --ioengine=io_uring under noring through urfs-uring --syscalls (quick)"
	table_head
	job randrw-d0-4k-qd32 randrw 0 4k 32
	job randrw-d1-4k-qd32 randrw 1 4k 32
	job randread-d1-4k-qd32-fixedbufs-regfiles randread 1 4k 32 --fixedbufs --registerfiles
	job randrw-d1-4k-qd32-sqthread_poll randrw 1 4k 32 --sqthread_poll=1
	job randrw-d1-128k-qd8-nonvectored randrw 1 128k 8 --nonvectored=1
	summary
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

bench() {
	local cost=$O/obj/progs/trap_cost file=$WORK/bench.dat
	[ -x "$cost" ] || skip "no $cost (make builds it)"
	[ "$ODIRECT" = 1 ] || skip "$WORK refuses O_DIRECT"
	fio --name=layout --filename="$file" --size=64m --rw=write --bs=1m --output=/dev/null ||
		fail "cannot lay out $file"
	cat "$file" > /dev/null
	local kernel=1
	fio_run kernel kprobe "$WORK/kprobe.json" --ioengine=io_uring --rw=randread --size=1m --bs=4k ||
		kernel=0
	[ "$(check "$WORK/kprobe.json" $? randread)" = ok ] || kernel=0
	echo "fio $(fio --version), 4 KiB random reads of a 64 MiB file in $WORK, ${SECS}s runs, median of $REPEAT"
	echo "front: noring + urfs-uring --syscalls, io_uring engine; libaio, psync: under the same noring;"
	echo "kernel: io_uring engine, no filter$( [ $kernel = 0 ] && echo ' (refused here: not run)'). Buffered: --invalidate=0, warm file."
	local cases="d1 d32 d32b b1 b32 b32b" rounds=0 c e
	while [ $rounds -lt "$REPEAT" ]; do
		for c in $cases; do
			local d=${c:0:1} qd=${c:1} batch=()
			case $qd in *b) qd=${qd%b}; batch=(--iodepth_batch_submit="$qd" --iodepth_batch_complete_min=1
				--iodepth_batch_complete_max="$qd") ;; esac
			for e in front aio kernel; do
				[ $e = kernel ] && [ $kernel = 0 ] && continue
				local setup=$e engine=io_uring
				if [ $e = aio ]; then
					setup=noring; engine=libaio; [ "$d" = b ] && engine=psync
				fi
				local out=$WORK/b-$c-$e.json
				fio_run $setup bench "$out" --filename="$file" --ioengine=$engine --rw=randread --bs=4k \
					--size=64m --iodepth="$qd" --direct=$([ "$d" = d ] && echo 1 || echo 0) \
					--invalidate=0 --time_based --runtime="$SECS" --randrepeat=0 --norandommap "${batch[@]}"
				local st=$?
				local why
				why=$(check "$out" $st randread)
				[ "$why" = ok ] || fail "bench $c $e ($engine): $why"
				jq '[.jobs[].read.iops] | add' "$out" >> "$WORK/iops-$c-$e"
			done
		done
		rounds=$((rounds + 1))
	done
	declare -A M
	printf '| %-23s | %10s | %17s | %11s | %12s | %12s |\n' case "front IOPS" "libaio/psync IOPS" "kernel IOPS" "front/other" "front/kernel"
	printf '|%s|%s|%s|%s|%s|%s|\n' ------------------------- ------------ ------------------- ------------- -------------- --------------
	for c in $cases; do
		for e in front aio kernel; do
			M[$c-$e]=$( [ -s "$WORK/iops-$c-$e" ] && median < "$WORK/iops-$c-$e" || echo 0)
		done
		local label
		case $c in
		d*) label="O_DIRECT qd${c:1}" ;;
		b*) label="buffered qd${c:1}" ;;
		esac
		case $label in *b) label="${label%b} batch ${c:1:2}" ;; esac
		printf '| %-23s | %10.0f | %17.0f | %11.0f | %12s | %12s |\n' "$label" "${M[$c-front]}" "${M[$c-aio]}" \
			"${M[$c-kernel]}" "$(ratio "${M[$c-front]}" "${M[$c-aio]}")" "$(ratio "${M[$c-front]}" "${M[$c-kernel]}")"
	done
	echo "O_DIRECT qd32 front/libaio: $(ratio "${M[d32-front]}" "${M[d32-aio]}"), batch 32: $(ratio "${M[d32b-front]}" "${M[d32b-aio]}") (target 1.0x)"
	echo "buffered qd32 front/psync: $(ratio "${M[b32-front]}" "${M[b32-aio]}"), batch 32: $(ratio "${M[b32b-front]}" "${M[b32b-aio]}") (target 1.0x)"
	echo "O_DIRECT qd1 front/libaio: $(ratio "${M[d1-front]}" "${M[d1-aio]}"); buffered qd1 front/psync: $(ratio "${M[b1-front]}" "${M[b1-aio]}")"
	# shellcheck disable=SC2046
	echo "each inline io_uring_enter a trap (URING_SYSCALLS_PATCH=0):"
	URING_SYSCALLS_PATCH=0 $(runner front) "$cost" || fail "trap_cost through the front failed"
	echo "the inline site patched into a call at its first trap (the default):"
	# shellcheck disable=SC2046
	$(runner front) "$cost" || fail "trap_cost through the front failed"
	exit 0
}

# --- fio's t/io_uring, from Debian's fio source package ------------------------
t_io_uring_build() {
	TIOU=$(ls -d "$FIOSRC"/src/fio-*/ 2>/dev/null | head -n 1)
	if [ -z "$TIOU" ] || [ ! -f "$TIOU/t/io_uring.c" ]; then
		. "$HERE/deb-src.sh"
		deb_source fio "$FIOSRC/src" || skip "$DEB_SRC_WHY"
		TIOU=$(ls -d "$FIOSRC"/src/fio-*/ 2>/dev/null | head -n 1)
		[ -n "$TIOU" ] && [ -f "$TIOU/t/io_uring.c" ] || skip "apt-get source fio gave no t/io_uring.c"
	fi
	TIOU=${TIOU%/}
	[ -x "$TIOU/t/io_uring" ] && return 0
	command -v gcc >/dev/null || skip "no gcc"
	if [ ! -f "$TIOU/config-host.h" ]; then
		(cd "$TIOU" && ./configure --disable-native) >"$FIOSRC/configure.log" 2>&1 ||
			skip "fio's configure failed: $(tail -n 1 "$FIOSRC/configure.log")"
	fi
	make -C "$TIOU" t/io_uring >"$FIOSRC/make.log" 2>&1 ||
		fail "make t/io_uring in $TIOU failed: $(grep -m 1 -E 'error' "$FIOSRC/make.log")"
}

# tiou SETUP OPTS: runs t/io_uring OPTS for 2 s on the work file; prints "ok IOPS" or what failed.
tiou() {
	local out=$WORK/tiou.out st
	# shellcheck disable=SC2046,SC2086
	timeout -k 10 60 $(runner "$1") "$TIOU/t/io_uring" $2 -r 2 "$WORK/tiou.dat" >"$out" 2>&1
	st=$?
	local iops
	iops=$(sed -n 's/^Maximum IOPS=//p' "$out")
	if [ $st = 0 ] && [ -n "$iops" ] && [ "$iops" != 0 ] && ! grep -q 'unexpected ret\|doesn.t support' "$out"; then
		echo "ok $iops"
	else
		echo "exit $st: $( (grep -m 1 -o 'unexpected ret=-\{0,1\}[0-9]*' "$out" ||
			grep -v '^\(Engine\|submitter\|polled\|Added\|IOPS\|Exiting\)' "$out") | tr '\n' ' ' | cut -c1-40)"
	fi
}

t_io_uring() {
	t_io_uring_build
	fio --name=layout --filename="$WORK/tiou.dat" --size=64m --rw=write --bs=1m --output=/dev/null ||
		fail "cannot lay out $WORK/tiou.dat"
	local r
	r=$(tiou noring "-p0")
	case $r in ok*) fail "t/io_uring runs under noring alone: the filter does not block io_uring" ;; esac
	echo "fio's t/io_uring ($TIOU), 2 s a run on a 64 MiB file in $WORK; front: noring + urfs-uring"
	echo "--syscalls; kernel: no filter (its answer, for comparison: not checked)"
	printf '| %-30s | %-34s | %-34s |\n' "t/io_uring options" front kernel
	printf '|%s|%s|%s|\n' -------------------------------- ------------------------------------ ------------------------------------
	local c
	# O_DIRECT (its default) unless -O0; -p polled (IOPOLL), -B fixed buffers, -F registered
	# files, -X registered ring, -N no-ops, -S preadv2 (no ring), -d/-s/-c depth and batches
	for c in "-p0 -B0 -F0 -X0" "-p0 -B0 -F1 -X0" "-p0 -B1 -F0 -X0" "-p0 -B0 -F0 -X1" "-p0 -B1 -F1 -X1" \
		"-p0 -O0" "-p0 -O0 -B1 -F1" "-p0 -d1 -s1 -c1" "-p1 -B0 -F0 -X0" "-p1" "-p1 -O0" "-N1 -p0" "-S1 -p0"; do
		case $c in *-O0*) ;; *) if [ "$ODIRECT" = 0 ]; then
			printf '| %-30s | %-34s | %-34s |\n' "$c" "SKIP (no O_DIRECT)" -
			SKIPPED=$((SKIPPED + 1)); continue; fi ;; esac
		local f k
		f=$(tiou front "$c")
		k=$(tiou kernel "$c")
		printf '| %-30s | %-34s | %-34s |\n' "$c" "$f" "$k"
		case $f in ok*) PASSED=$((PASSED + 1)) ;; *) FAILED=$((FAILED + 1)) ;; esac
	done
	summary
}

case $MODE in
matrix) precheck; matrix ;;
quick) JOB_TIMEOUT=60; precheck; quick ;;
bench) precheck; bench ;;
t-io-uring) precheck; t_io_uring ;;
esac
