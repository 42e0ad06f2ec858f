/* SPDX-License-Identifier: MIT */
/* Description: Debian's unchanged MariaDB server (mariadbd links
 * liburing.so.2) on the liburing drop-in. scripts/mariadb-sysbench.sh --quick starts a private
 * mysqld on a scratch datadir and runs sysbench oltp_read_only and oltp_read_write (2 tables,
 * 3 s each) in the four setups: the kernel's io_uring (an io_uring part: skipped where the
 * kernel refuses it), io_uring blocked by noring with the drop-in ($UR_BIN/uring) in
 * LD_LIBRARY_PATH, the same without the drop-in (MariaDB's libaio fallback, its log warns) and
 * innodb_use_native_aio=0. It fails unless: every sysbench run ends without error, CHECK TABLE
 * is OK and no row is missing after each; the drop-in run's error log says "Using io_uring"
 * with no io_uring warning, mysqld mapped the drop-in, and under strace -f its io_uring_setup
 * was refused while its page writes were kernel AIO submitted by the emulated ring (every iocb
 * names the ring's eventfd); and after a kill -9 of mysqld in the middle of a drop-in run, the
 * restart (drop-in again) runs crash recovery and CHECK TABLE is OK with no row lost.
 * Without mariadb-server or sysbench installed (sh scripts/install-deps.sh mariadb) this is a
 * counted SKIP-PART, not a pass; the script itself never installs anything here.
 */
#include "testutil.h"

int main(void)
{
	static const char *const need[] = { "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db",
					    "/usr/bin/mariadb", "/usr/bin/sysbench" };
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		if (access(need[i], X_OK) != 0) {
			char why[512];
			snprintf(why, sizeof why, "%s: %s (packages mariadb-server, sysbench: "
				 "sh scripts/install-deps.sh mariadb)", need[i], strerror(errno));
			tu_part_skip("mariadb", "MariaDB + sysbench through the drop-in", why);
			return 0;
		}
	}
	const char *args[] = { "--quick", "--no-install", NULL };
	return tu_run_script("scripts/mariadb-sysbench.sh", args);
}
