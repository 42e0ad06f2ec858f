/* SPDX-License-Identifier: MIT */
/* Description: IORING_SETUP_SQ_AFF pins the SQPOLL poller to sq_thread_cpu, in all three modes: the
 * ring works (a NOP completes), a thread of the process, not the main one, may then run on that CPU
 * only (the emulation's poller, the kernel's iou-sqp thread); a CPU the process may not run on
 * (beyond the CPUs that exist) is -EINVAL, as is SQ_AFF without SQPOLL; a CPU outside the calling
 * thread's own affinity but in the process's cpuset is fine (taskset -c 0 with the poller on CPU 1).
 * liburing's io_uring_setup test checks the second.
 * Serial: checks CPU affinities (tests/run.sh runs it alone).
 */
#include "test_uring.h"
#include "parts.h"
#include <dirent.h>
#include <sched.h>
#include <sys/sysinfo.h>

/* Whether a thread of this process other than the main one has exactly cpu as its Cpus_allowed_list. */
static int pinned_thread(int cpu)
{
	char want[32], path[300], line[256];
	snprintf(want, sizeof want, "Cpus_allowed_list:\t%d\n", cpu);
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;               /* a thread gone meanwhile */
		while (fgets(line, sizeof line, f))
			if (!strcmp(line, want))
				found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

static int two_cpus;               /* the process may run on 2 CPUs or more: probed once, in main */

static void body(void)
{
	cpu_set_t may;
	CHECK_EQ(sched_getaffinity(0, sizeof may, &may), 0);
	int cpu = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &may))
			cpu = i;                /* the last CPU this process may run on */
	CHECK(cpu >= 0);

	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
	p.sq_thread_cpu = (unsigned)cpu;
	CHECK_EQ(io_uring_queue_init_params(4, &ring, &p), 0);
	tu_uring_check_mode(&ring);
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 5;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe c;
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 5);
	CHECK_EQ(c.res, 0);
	if (two_cpus)
		CHECK(pinned_thread(cpu));
	io_uring_queue_exit(&ring);

	/* the calling thread pinned elsewhere (taskset, sched_setaffinity): the poller may still
	 * go to any CPU of the process's cpuset, as the kernel's check (cpuset_cpus_allowed) */
	if (two_cpus) {
		cpu_set_t first;
		CPU_ZERO(&first);
		for (int i = 0; i < cpu; i++)
			if (CPU_ISSET(i, &may)) {
				CPU_SET(i, &first);
				break;
			}
		CHECK_EQ(sched_setaffinity(0, sizeof first, &first), 0);
		memset(&p, 0, sizeof p);
		p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
		p.sq_thread_cpu = (unsigned)cpu;
		CHECK_EQ(io_uring_queue_init_params(4, &ring, &p), 0);
		s = tu_sqe(&ring);
		io_uring_prep_nop(s);
		s->user_data = 6;
		CHECK_EQ(io_uring_submit(&ring), 1);
		tu_next(&ring, &c);
		CHECK_EQ(c.user_data, 6);
		CHECK(pinned_thread(cpu));
		io_uring_queue_exit(&ring);
		CHECK_EQ(sched_setaffinity(0, sizeof may, &may), 0);
	}

	/* a CPU beyond those that exist; SQ_AFF without SQPOLL */
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
	p.sq_thread_cpu = (unsigned)get_nprocs_conf();  /* one past the last that exists */
	CHECK_EQ(io_uring_queue_init_params(4, &ring, &p), -EINVAL);
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQ_AFF;
	CHECK_EQ(io_uring_queue_init_params(4, &ring, &p), -EINVAL);
}

int main(void)
{
	cpu_set_t may;
	CHECK_EQ(sched_getaffinity(0, sizeof may, &may), 0);
	two_cpus = CPU_COUNT(&may) > 1;
	if (two_cpus)
		tu_part_ran("2 CPUs", "the poller pinned apart from the main thread");
	else
		tu_part_skip("2 CPUs", "the poller pinned apart from the main thread",
			     "this process may run on one CPU only");
	return tu_uring_main(body);
}
