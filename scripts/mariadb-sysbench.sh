#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/mariadb-sysbench.sh - MariaDB through the liburing drop-in (issue 11):
# Debian's unchanged mariadbd (it links liburing.so.2) on a private, scratch
# datadir, measured with sysbench oltp_read_write and oltp_read_only under four
# setups in one run, interleaved round by round:
#   kernel   the kernel's io_uring (Debian's liburing; log: "InnoDB: Using io_uring")
#   dropin   io_uring blocked by ./noring, the drop-in ($O/uring) in LD_LIBRARY_PATH:
#            InnoDB's asynchronous I/O through the emulated ring
#   libaio   io_uring blocked by ./noring, Debian's liburing: MariaDB warns and
#            falls back to Linux native AIO (libaio)
#   simaio   innodb_use_native_aio=0: InnoDB's thread-simulated AIO
#   dropinB  as dropin, with another build's drop-in (--dropin-b DIR): two builds
#            side by side, interleaved, so drift hits both alike
# It prints transactions/s, p95 latency and mysqld's CPU (utime+stime from
# /proc, during the sysbench run) for each, medians over the rounds, as a
# Markdown table with the drop-in's ratios; runs CHECK TABLE and a row count on
# every table after every run; proves the drop-in run went through the emulated
# ring (error log, loaded library, strace -f of the AIO it submits); and kills
# mysqld with SIGKILL in the middle of a drop-in run, restarts it (drop-in
# again) and checks that it recovered: CHECK TABLE ok, no row lost.
# docs/BENCHMARKS.md says what the figures mean.
#
#   bash scripts/mariadb-sysbench.sh [options]
#   --tables N        sysbench tables (default 4)
#   --table-size N    rows per table (default 100000: about 60 MB a table)
#   --threads N       sysbench threads (default 4)
#   --time S          seconds of each sysbench run (default 30)
#   --rounds N        interleaved rounds of the four setups (default 3); medians
#   --buffer-pool SZ  innodb_buffer_pool_size (default 64M; keep it below the data)
#   --setups LIST     which setups, e.g. "dropin libaio" (default: all four)
#   --quick           2 tables of 20000 rows, 8M pool, 3 s runs, 1 round (the test)
#   --no-install      exit 77 instead of installing missing packages
#   --out FILE        also write the Markdown report to FILE
#   --work DIR        scratch folder (default: a new one under ${TMPDIR:-/tmp})
#   --dropin DIR      the drop-in's folder (default $O/uring); --noring PATH ($O/noring)
#   --dropin-b DIR    a second drop-in's folder (another build), the setup dropinB, added
#                     after dropin to the setups
#   --port N          mysqld's TCP port on 127.0.0.1 (default: a free one)
# Environment: O (the build directory, default .).
# Installs mariadb-server and sysbench with apt-get when missing (no system
# mysqld is started: policy-rc.d answers 101 during the install). mysqld runs as
# the current user (as root with --user=root) with its own socket and port in
# the scratch folder; it is stopped and the folder removed at the end, also on
# failure or Ctrl-C. Exit 0: all checks held; 1: a check failed; 77: cannot run
# here (with the reason). Prints "PART:"/"SKIP-PART:" lines for tests/run.sh
# (the kernel setup is an io_uring part: skipped where the kernel refuses).
# Must never: report a figure of a run whose sysbench failed or whose tables do
# not check, count a drop-in run that did not go through the emulated ring, or
# leave a mysqld running.
set -u
O=${O:-.}
TABLES=4 SIZE=100000 THREADS=4 TIME=30 ROUNDS=3 BP=64M
SETUPS="kernel dropin libaio simaio"
QUICK=0 INSTALL=1 OUT="" WORK="" PORT=""
DROPIN=$O/uring NORING=$O/noring DROPINB=""
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--tables) TABLES=$2; shift ;;
	--table-size) SIZE=$2; shift ;;
	--threads) THREADS=$2; shift ;;
	--time) TIME=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--buffer-pool) BP=$2; shift ;;
	--setups) SETUPS=$2; shift ;;
	--quick) QUICK=1; TABLES=2 SIZE=20000 TIME=3 ROUNDS=1 BP=8M ;;
	--no-install) INSTALL=0 ;;
	--out) OUT=$2; shift ;;
	--work) WORK=$2; shift ;;
	--dropin) DROPIN=$2; shift ;;
	--dropin-b) DROPINB=$2; shift ;;
	--noring) NORING=$2; shift ;;
	--port) PORT=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

skip() { echo "mariadb-sysbench: SKIP: $*"; exit 77; }
fail() { echo "mariadb-sysbench: FAIL: $*"; exit 1; }
say() { echo "mariadb-sysbench: $*"; }

# --- packages ------------------------------------------------------------------------
have_pkgs() { [ -x /usr/sbin/mariadbd ] && command -v mariadb-install-db >/dev/null &&
	command -v mariadb >/dev/null && command -v sysbench >/dev/null; }
POLICY_MADE=0
if ! have_pkgs; then
	[ "$INSTALL" = 1 ] || skip "mariadb-server or sysbench is not installed (sh scripts/install-deps.sh mariadb)"
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO=sudo
	if [ ! -e /usr/sbin/policy-rc.d ]; then   # no system-wide mysqld started by the package
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null &&
			$SUDO chmod 755 /usr/sbin/policy-rc.d && POLICY_MADE=1
	fi
	say "installing mariadb-server and sysbench (apt-get)"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
		mariadb-server sysbench > /dev/null
	rc=$?
	[ "$POLICY_MADE" = 1 ] && $SUDO rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || fail "apt-get install mariadb-server sysbench failed"
fi
MYSQLD=/usr/sbin/mariadbd
ldd "$MYSQLD" | grep -q 'liburing\.so\.2' || skip "$MYSQLD does not link liburing.so.2"
command -v strace >/dev/null || skip "strace is not installed (scripts/install-deps.sh installs it)"
[ -x "$NORING" ] || skip "no noring launcher at $NORING (make builds it)"
[ -f "$DROPIN/liburing.so.2" ] || skip "no drop-in at $DROPIN/liburing.so.2 (make builds it)"
DROPIN=$(cd "$DROPIN" && pwd)
if [ -n "$DROPINB" ]; then
	[ -f "$DROPINB/liburing.so.2" ] || fail "--dropin-b $DROPINB: no liburing.so.2 there"
	DROPINB=$(cd "$DROPINB" && pwd)
	[ "$DROPINB" != "$DROPIN" ] || fail "--dropin-b names the drop-in of --dropin"
	SETUPS=$(echo " $SETUPS " | sed 's/ dropin / dropin dropinB /; s/^ //; s/ $//')
	case " $SETUPS " in *" dropinB "*) ;; *) SETUPS="$SETUPS dropinB" ;; esac
fi
NORING=$(cd "$(dirname "$NORING")" && pwd)/$(basename "$NORING")
. "$(dirname "$0")/dropin-env.sh"
DENV=$(dropin_env "$DROPIN")   # the ASan runtime, for a sanitizer build

# --- scratch folder, private mysqld, cleanup ----------------------------------------------
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/mariadb-sysbench.XXXXXX") || fail "mktemp"
	RMWORK=1
else
	mkdir -p "$WORK" || fail "mkdir $WORK"
	RMWORK=0
fi
WORK=$(cd "$WORK" && pwd)
MPID="" DPID=""
cleanup() {
	# mysqld itself (DPID; MPID may be the strace it runs under), if it is still ours
	if [ -n "$DPID" ] && [ "$(cat "/proc/$DPID/comm" 2>/dev/null)" = mariadbd ] &&
	   grep -q "$WORK" "/proc/$DPID/cmdline" 2>/dev/null; then
		kill -9 "$DPID" 2>/dev/null
	fi
	if [ -n "$MPID" ] && kill -0 "$MPID" 2>/dev/null; then
		kill -9 "$MPID" 2>/dev/null
		wait "$MPID" 2>/dev/null
	fi
	[ -n "${SBPID:-}" ] && kill "$SBPID" 2>/dev/null
	[ "$RMWORK" = 1 ] && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "$PORT" ]; then   # a free port: nothing answers on it
	PORT=$((20000 + $$ % 20000))
	while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
fi
SOCK=$WORK/mysqld.sock
USEROPT=""
[ "$(id -u)" -eq 0 ] && USEROPT="user=root"
cat > "$WORK/my.cnf" <<EOF
[mysqld]
socket=$SOCK
port=$PORT
bind-address=127.0.0.1
pid-file=$WORK/mysqld.pid
$USEROPT
skip-log-bin
performance_schema=0
max_connections=200
innodb_flush_method=O_DIRECT
innodb_buffer_pool_size=$BP
innodb_log_file_size=64M
innodb_flush_log_at_trx_commit=1
innodb_buffer_pool_dump_at_shutdown=0
innodb_buffer_pool_load_at_startup=0
EOF
SQL() { mariadb --no-defaults -S "$SOCK" -uroot -N -B "$@"; }
CLK=$(getconf CLK_TCK)

# launch SETUP -> the command prefix that runs mysqld in that setup
launch() {
	case $1 in
	kernel|simaio) echo "env" ;;
	dropin) echo "env LD_LIBRARY_PATH=$DROPIN $DENV $NORING" ;;
	dropinB) echo "env LD_LIBRARY_PATH=$DROPINB $DENV $NORING" ;;
	libaio) echo "$NORING" ;;
	*) fail "unknown setup $1" ;;
	esac
}
# start SETUP DATADIR LOG [WRAP...]: starts mysqld, waits until it answers; MPID
start() {
	local setup=$1 data=$2 log=$3 extra="" i
	shift 3
	[ "$setup" = simaio ] && extra="--innodb-use-native-aio=0"
	: > "$log"
	rm -f "$WORK/mysqld.pid"
	DPID=""
	# shellcheck disable=SC2046
	"$@" $(launch "$setup") "$MYSQLD" --defaults-file="$WORK/my.cnf" --datadir="$data" \
		--log-error="$log" $extra > "$log.out" 2>&1 &
	MPID=$!
	for i in $(seq 600); do
		kill -0 "$MPID" 2>/dev/null ||
			fail "$setup: mysqld exited at start: $(tail -n 3 "$log" "$log.out" | tr '\n' ' ')"
		if SQL -e "select 1" >/dev/null 2>&1; then
			DPID=$(cat "$WORK/mysqld.pid")   # mysqld's own pid (MPID may be strace's)
			return 0
		fi
		sleep 0.1
	done
	fail "$setup: mysqld does not answer after 60 s: $(tail -n 2 "$log" | tr '\n' ' ')"
}
stop() {   # a clean shutdown of MPID (SIGKILL after 120 s)
	local i
	SQL -e "shutdown" >/dev/null 2>&1 || kill "$MPID" 2>/dev/null
	for i in $(seq 1200); do
		kill -0 "$MPID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$MPID" 2>/dev/null; then
		kill -9 "$MPID"; wait "$MPID" 2>/dev/null; MPID=""
		fail "mysqld did not shut down in 120 s"
	fi
	wait "$MPID" 2>/dev/null
	MPID=""
}
cpu() { sed 's/.*) //' "/proc/$DPID/stat" | awk '{ print $12 + $13 }'; }   # ticks

# check_log SETUP LOG: the error log says the I/O path the setup must take.
check_log() {
	local s=$1 log=$2 uring=0 warn=0 native=0
	grep -q 'InnoDB: Using io_uring' "$log" && uring=1
	grep -qE 'io_uring_queue_init\(\) failed|create_uring failed|falling back to libaio' "$log" "$log.out" && warn=1
	grep -q 'InnoDB: Using Linux native AIO' "$log" && native=1
	case $s in
	kernel)
		[ "$warn" = 0 ] || return 2   # the kernel refuses io_uring here
		[ "$uring" = 1 ] || fail "kernel: the error log does not say 'InnoDB: Using io_uring'" ;;
	dropin|dropinB)
		local lib=$DROPIN
		[ "$s" = dropinB ] && lib=$DROPINB
		[ "$warn" = 0 ] || fail "$s: the error log warns: $(grep -hE 'io_uring|libaio' "$log" "$log.out" | head -n 1)"
		[ "$uring" = 1 ] || fail "$s: the error log does not say 'InnoDB: Using io_uring'"
		grep -q " $lib/liburing.so.2\$" "/proc/$DPID/maps" || fail "$s: mysqld did not map $lib/liburing.so.2" ;;
	libaio)
		[ "$warn" = 1 ] && [ "$native" = 1 ] ||
			fail "libaio: the error log does not show the io_uring warning and 'Using Linux native AIO'" ;;
	simaio)
		[ "$uring" = 0 ] && [ "$native" = 0 ] ||
			fail "simaio: innodb_use_native_aio=0, yet the log says io_uring or native AIO" ;;
	esac
	return 0
}

# check_tables TAG: CHECK TABLE says OK for every table, and none lost a row
# (oltp_read_write deletes and re-inserts the same ids).
check_tables() {
	local t out n
	for t in $(seq "$TABLES"); do
		out=$(SQL -e "check table sbtest.sbtest$t" 2>&1) || fail "$1: check table sbtest$t: $out"
		echo "$out" | awk -F'\t' '$3 == "status" && $4 == "OK" { ok = 1 } $3 == "error" { bad = 1 }
			END { exit !(ok && !bad) }' || fail "$1: CHECK TABLE sbtest$t: $(echo "$out" | tr '\n\t' '  ')"
		n=$(SQL -e "select count(*) from sbtest.sbtest$t" 2>&1) || fail "$1: count sbtest$t: $n"
		[ "$n" = "$SIZE" ] || fail "$1: sbtest$t has $n rows, not $SIZE"
	done
}

SB_OPTS="--db-driver=mysql --mysql-socket=$SOCK --mysql-user=root --mysql-db=sbtest
	--tables=$TABLES --table-size=$SIZE --rand-type=uniform --percentile=95"
# bench SETUP ROUND TEST: one sysbench run; appends "setup test round tps p95 cpu_s txn ign"
bench() {
	local s=$1 r=$2 t=$3 c0 c1 out=$WORK/sb.$1.$2.$3
	c0=$(cpu)
	# shellcheck disable=SC2086
	timeout $((TIME + 120)) sysbench $SB_OPTS --threads="$THREADS" --time="$TIME" --report-interval=0 \
		"$t" run > "$out" 2>&1 || fail "$s: sysbench $t run failed: $(grep -m1 -E 'FATAL|error' "$out")"
	c1=$(cpu)
	grep -q 'FATAL' "$out" && fail "$s: sysbench $t: $(grep -m1 FATAL "$out")"
	awk -v s="$s" -v r="$r" -v t="$t" -v cpu=$(((c1 - c0))) -v clk="$CLK" '
		/^ *transactions:/ { n = $2; tps = $3; gsub(/\(/, "", tps) }
		/95th percentile:/ { p95 = $3 }
		/ignored errors:/ { ign = $3 }
		END { if (n == "" || p95 == "") exit 1
		      printf "%s %s %s %s %s %.2f %s %s\n", s, t, r, tps, p95, cpu / clk, n, ign }' \
		"$out" >> "$WORK/results" || fail "$s: sysbench $t printed no transactions/percentile"
	tail -n 1 "$WORK/results" | awk '{ printf "  %-7s %-16s round %s: %8.1f tps, p95 %6.2f ms, mysqld CPU %.2f s, %s errors ignored\n",
		$1, $2, $3, $4, $5, $6, $8 }'
}

say "MariaDB $("$MYSQLD" --version | awk '{ print $3 }'), $(sysbench --version); $TABLES tables x $SIZE rows," \
	"$THREADS threads, $TIME s per run, $ROUNDS round(s), buffer pool $BP, O_DIRECT; work $WORK, port $PORT"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average at start: $LOAD0 ($(nproc) CPUs)"

# --- the data, once: a template datadir that every run starts from ----------------------------
mariadb-install-db --no-defaults --datadir="$WORK/template" ${USEROPT:+--user=root} \
	--auth-root-authentication-method=normal --skip-test-db > "$WORK/install.log" 2>&1 ||
	fail "mariadb-install-db: $(tail -n 2 "$WORK/install.log" | tr '\n' ' ')"
start simaio "$WORK/template" "$WORK/prepare.err"
SQL -e "create database sbtest" || fail "create database"
t0=$(date +%s)
# shellcheck disable=SC2086
sysbench $SB_OPTS --threads=2 oltp_read_write prepare > "$WORK/prepare.log" 2>&1 ||
	fail "sysbench prepare: $(tail -n 2 "$WORK/prepare.log" | tr '\n' ' ')"
DATA_MB=$(SQL -e "select round(sum(data_length + index_length) / 1048576) from information_schema.tables where table_schema = 'sbtest'")
stop
say "prepared $TABLES x $SIZE rows in $(( $(date +%s) - t0 )) s: $DATA_MB MiB of InnoDB data and indexes, buffer pool $BP"
fresh() { rm -rf "$WORK/data" && cp -a "$WORK/template" "$WORK/data" || fail "copy of the datadir"; }

# --- the interleaved rounds ------------------------------------------------------------
: > "$WORK/results"
read -r -a LIST <<< "$SETUPS"
declare -A SKIPPED=()
for r in $(seq "$ROUNDS"); do
	n=${#LIST[@]}
	for i in $(seq 0 $((n - 1))); do
		s=${LIST[$(((i + r - 1) % n))]}   # each round starts one setup later
		[ -n "${SKIPPED[$s]:-}" ] && continue
		fresh
		start "$s" "$WORK/data" "$WORK/$s.err"
		check_log "$s" "$WORK/$s.err"
		if [ $? = 2 ]; then
			SKIPPED[$s]=1
			echo "SKIP-PART: io_uring: MariaDB on the kernel's io_uring: $(grep -hm1 'io_uring_queue_init' "$WORK/$s.err" | sed 's/.*\] //' | cut -c1-120)"
			stop; continue
		fi
		[ "$s" = kernel ] && [ "$r" = 1 ] && echo "PART: io_uring: MariaDB on the kernel's io_uring"
		bench "$s" "$r" oltp_read_only
		bench "$s" "$r" oltp_read_write
		check_tables "$s round $r"
		stop
	done
done
say "CHECK TABLE ok and $SIZE rows in each of the $TABLES tables after every run"

# --- proof: the drop-in run's AIO went through the emulated ring -------------------------------
# strace -f of a short oltp_read_write, from start to shutdown: under noring the
# drop-in's io_uring_setup is refused (EPERM), mysqld says "Using io_uring" all the
# same, and its asynchronous page I/O is kernel AIO submitted by the emulated
# ring: every iocb names the ring's eventfd (IOCB_FLAG_RESFD), and completions
# are read from the AIO ring without io_getevents. MariaDB's own libaio fallback
# submits iocbs without a resfd and reaps them with io_getevents.
prove() {
	local s=$1
	fresh
	start "$s" "$WORK/data" "$WORK/$s.proof.err" strace -f -qq -o "$WORK/$s.strace" \
		-e trace=io_uring_setup,io_uring_enter,io_submit,io_getevents,pread64,pwrite64
	check_log "$s" "$WORK/$s.proof.err" || fail "$s: log"
	# shellcheck disable=SC2086
	timeout 120 sysbench $SB_OPTS --threads="$THREADS" --time=3 oltp_read_write run > "$WORK/$s.proof.sb" 2>&1 ||
		fail "$s: sysbench under strace failed"
	stop
	awk '
		{ sc = $2; sub(/\(.*/, "", sc) }
		sc == "io_uring_setup" { if ($0 ~ /= -1 EPERM/) eperm++; else if ($0 ~ /= [0-9]+$/) ok++ }
		sc == "io_submit" { n = gsub(/aio_lio_opcode=IOCB_CMD_P/, "&"); sub_n += n
			rf = gsub(/aio_flags=IOCB_FLAG_RESFD/, "&"); resfd += rf
			rd += gsub(/IOCB_CMD_PREAD/, "&"); wr += gsub(/IOCB_CMD_PWRITE/, "&") }
		sc == "io_getevents" { ge++ }
		sc == "pread64" { pr++ }
		sc == "pwrite64" { pw++ }
		END { printf "%d %d %d %d %d %d %d %d %d\n", eperm, ok, sub_n, resfd, rd, wr, ge, pr, pw }' \
		"$WORK/$s.strace" > "$WORK/$s.counts"
}
if [[ " ${LIST[*]} " == *" dropin "* ]]; then
	prove dropin
	read -r de dk dn dr drd dwr dge dpr dpw < "$WORK/dropin.counts"
	PROOF="drop-in (noring): io_uring_setup refused (EPERM) $de time(s), mysqld says 'Using io_uring';"
	PROOF="$PROOF AIO iocbs submitted by the emulated ring: $dn ($drd reads, $dwr writes), $dr naming the ring's eventfd;"
	PROOF="$PROOF io_getevents $dge; synchronous pread64 $dpr, pwrite64 $dpw (InnoDB's own)"
	if [[ " ${LIST[*]} " == *" libaio "* ]]; then
		prove libaio
		read -r le lk ln lr lrd lwr lge lpr lpw < "$WORK/libaio.counts"
		PROOF2="libaio fallback (noring): io_uring_setup refused $le time(s); iocbs $ln ($lrd reads, $lwr writes),"
		PROOF2="$PROOF2 $lr with a resfd; io_getevents $lge; pread64 $lpr, pwrite64 $lpw"
	fi
	say "strace -f of a 3 s oltp_read_write, start to shutdown:"
	echo "  $PROOF"
	[ -n "${PROOF2:-}" ] && echo "  $PROOF2"
	[ "$de" -ge 1 ] && [ "$dk" = 0 ] || fail "dropin: io_uring_setup was not refused by noring (or succeeded)"
	[ "$dwr" -gt 0 ] || fail "dropin: no page write went through the emulated ring's AIO"
	[ "$dr" = "$dn" ] || fail "dropin: $((dn - dr)) of $dn iocbs were not submitted by the emulated ring (no resfd)"
	echo "PART: emulated ring: mariadbd's page I/O through the drop-in under noring"
fi

# --- kill -9 in the middle of a drop-in run, then recovery ---------------------------------
if [[ " ${LIST[*]} " == *" dropin "* ]]; then
	fresh
	start dropin "$WORK/data" "$WORK/crash.err"
	check_log dropin "$WORK/crash.err"
	# shellcheck disable=SC2086
	sysbench $SB_OPTS --threads="$THREADS" --time=$((TIME * 4 + 10)) oltp_read_write run > "$WORK/crash.sb" 2>&1 &
	SBPID=$!
	sleep $(( (TIME + 1) / 2 + 1 ))
	kill -0 "$SBPID" 2>/dev/null || fail "crash: sysbench ended before the kill: $(tail -n 2 "$WORK/crash.sb")"
	c0=$(SQL -e "show global status like 'Innodb_buffer_pool_pages_dirty'" | awk '{ print $2 }')
	kill -9 "$MPID"; wait "$MPID" 2>/dev/null; MPID=""
	wait "$SBPID" 2>/dev/null; SBPID=""
	start dropin "$WORK/data" "$WORK/recover.err"
	check_log dropin "$WORK/recover.err"
	grep -qE 'InnoDB: (Starting crash recovery|Starting final batch to recover)' "$WORK/recover.err" ||
		fail "recovery: the restart after SIGKILL did not recover (no crash recovery in its log)"
	check_tables "after SIGKILL"
	stop
	say "kill -9 of mysqld (drop-in) during oltp_read_write with $c0 dirty pages, restart through the" \
		"drop-in: crash recovery ran, CHECK TABLE ok, $SIZE rows in each table"
fi

# --- the report --------------------------------------------------------------------------
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
report() {
	echo "MariaDB $("$MYSQLD" --version | awk '{ print $3 }'), sysbench $(sysbench --version | awk '{ print $2 }'):" \
		"$TABLES tables x $SIZE rows ($DATA_MB MiB), $THREADS threads, $TIME s per run, --rand-type=uniform;"
	echo "innodb_buffer_pool_size=$BP, innodb_flush_method=O_DIRECT, innodb_flush_log_at_trx_commit=1;" \
		"medians of $ROUNDS interleaved round(s); load average $LOAD0 at start, $LOAD1 at the end ($(nproc) CPUs," \
		"Linux $(uname -r))."
	[ "$QUICK" = 1 ] && echo "(--quick: a check, not a measurement; these figures mean little.)"
	echo
	echo "| setup | test | transactions/s | p95 latency (ms) | mysqld CPU (ms/transaction) | tps vs libaio fallback | vs simulated AIO | vs kernel io_uring |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	awk '
		function med(key,   n, i, j, t, a) {
			n = split(vals[key], a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ vals[$1 " " $2 " tps"] = vals[$1 " " $2 " tps"] " " $4
		  vals[$1 " " $2 " p95"] = vals[$1 " " $2 " p95"] " " $5
		  vals[$1 " " $2 " cpt"] = vals[$1 " " $2 " cpt"] " " ($7 > 0 ? 1000 * $6 / $7 : 0)
		  seen[$1] = 1; tests[$2] = 1 }
		END {
			name["kernel"] = "kernel io_uring"; name["dropin"] = "**drop-in** (noring)"; name["dropinB"] = "drop-in B (--dropin-b)"
			name["libaio"] = "libaio fallback (noring)"; name["simaio"] = "simulated AIO (native_aio=0)"
			split("oltp_read_write oltp_read_only", tl, " "); split("kernel dropin dropinB libaio simaio", sl, " ")
			for (ti = 1; ti <= 2; ti++) { t = tl[ti]; if (!(t in tests)) continue
				for (si = 1; si <= 5; si++) { s = sl[si]; if (!(s in seen)) continue
					tps = med(s " " t " tps")
					line = sprintf("| %s | %s | %.1f | %.2f | %.3f |", name[s], t, tps, med(s " " t " p95"), med(s " " t " cpt"))
					split("libaio simaio kernel", rl, " ")
					for (ri = 1; ri <= 3; ri++) {
						o = rl[ri]
						line = line ((o in seen) && o != s ? sprintf(" %.2fx |", tps / med(o " " t " tps")) : " |")
					}
					print line
				}
			}
		}' "$WORK/results"
	echo
	echo "Every run (setup, test, round, tps, p95 ms, mysqld CPU s, transactions, ignored errors):"
	echo
	sed 's/^/    /' "$WORK/results"
	echo
	echo "Proof of the emulated ring (strace -f, 3 s oltp_read_write): ${PROOF:-not run}"
	[ -n "${PROOF2:-}" ] && echo "For comparison, $PROOF2"
	echo
	echo "CHECK TABLE: ok on every table after every run; kill -9 mid-run (drop-in) and restart: recovered, CHECK TABLE ok, no row lost."
}
report > "$WORK/report.md"
echo
cat "$WORK/report.md"
[ -n "$OUT" ] && cp "$WORK/report.md" "$OUT"
exit 0
