/* SPDX-License-Identifier: MIT */
/*
 * emu.c - the emulated ring: memory in the kernel's layout, the ring fd, CQ
 * posting with overflow (IORING_FEAT_NODROP), io_uring_enter (submit, wait,
 * EXT_ARG timeouts, signal masks), and the SQPOLL thread; io_uring_register is
 * register.c.
 *
 * The ring fd is an eventfd: it is readable while CQEs may be pending (it is
 * written when a CQE is posted and it was clear, cleared when a waiter finds
 * too few CQEs, or enter finds the CQ empty), so poll(ring_fd) and a waiter in
 * io_uring_enter sleep on the same object. Waiting is ppoll() on it, which
 * also gives the signal-mask and -EINTR semantics of the kernel's wait.
 *
 * Must never: drop a CQE (overflow list; only an allocation failure counts in
 * cq.overflow), trust the application's head/tail/array (every index is
 * masked or checked), read an argument pointer without ucopy(), or keep the
 * ring lock across a blocking system call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "uring_int.h"

void api_fill_ring(struct io_uring *ring, const struct io_uring_params *p, void *sqr, void *cqr,
		   size_t sq_sz, size_t cq_sz, void *sqes);

/* By fd number; after the EMU_MAX_FD numbers, the EMU_VFD_N virtual ones. */
static struct emu_ring *_Atomic emu_tab[EMU_MAX_FD + EMU_VFD_N];

static struct emu_ring *_Atomic *tab_slot(int fd)
{
	if ((unsigned)fd < EMU_MAX_FD)
		return &emu_tab[fd];
	return emu_vfd(fd) ? &emu_tab[EMU_MAX_FD + (fd - EMU_VFD_LO)] : NULL;
}

struct emu_ring *emu_find(int fd)
{
	struct emu_ring *_Atomic *t = tab_slot(fd);
	return t ? atomic_load_explicit(t, memory_order_acquire) : NULL;
}

/* A free virtual number for r (EMU_VFD_LO...), claimed; -EMFILE when none. */
static int vfd_claim(struct emu_ring *r)
{
	for (int i = 0; i < EMU_VFD_N; i++) {
		struct emu_ring *want = NULL;
		if (atomic_compare_exchange_strong(&emu_tab[EMU_MAX_FD + i], &want, r))
			return EMU_VFD_LO + i;
	}
	return -EMFILE;
}

/* The kernel's id of the eventfd behind fd (/proc/self/fdinfo), -2 if fd is
 * not an eventfd, -1 if that cannot be told (no /proc). */
static long efd_id(int fd)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	ssize_t n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *id = strstr(buf, "eventfd-id:");
	return id ? strtol(id + 11, NULL, 10) : -2;
}

/* The ring's eventfd id, looked up on first need (from our own dup, which
 * names the same eventfd whatever the program did with its fd), not at
 * setup: a ring whose fd is never checked never reads /proc. */
static long ring_efd_id(struct emu_ring *r)
{
	long id = __atomic_load_n(&r->efd_id, __ATOMIC_RELAXED);
	if (id == EMU_EFD_ID_UNKNOWN) {
		id = efd_id(r->ifd);
		__atomic_store_n(&r->efd_id, id, __ATOMIC_RELAXED);
	}
	return id;
}

/*
 * The emulated ring whose fd this really is. The table is by fd number, and a
 * program may close a ring fd by hand and get the number back for another
 * file; where it matters (an operation on the fd, not the ring's own calls)
 * the eventfd's kernel id is compared.
 */
struct emu_ring *emu_find_checked(int fd)
{
	struct emu_ring *r = emu_find(fd);
	if (!r || ring_efd_id(r) == -1)
		return r;
	long id = efd_id(fd);
	return id == -1 || id == ring_efd_id(r) ? r : NULL;
}

/*
 * fd is not in the table, and the kernel refused it: is it a dup() of an
 * emulated ring's eventfd? Then it names that ring from now on. Only called
 * after a failed kernel call, so it costs a kernel ring nothing.
 */
struct emu_ring *emu_alias(int fd)
{
	if ((unsigned)fd >= EMU_MAX_FD)
		return NULL;
	long id = efd_id(fd);
	if (id < 0)
		return NULL;
	for (int i = 0; i < EMU_MAX_FD; i++) {
		struct emu_ring *r = atomic_load_explicit(&emu_tab[i], memory_order_acquire);
		if (r && ring_efd_id(r) == id) {
			atomic_store_explicit(&r->aliased, 1, memory_order_relaxed);
			atomic_store_explicit(&emu_tab[fd], r, memory_order_release);
			return r;
		}
	}
	return NULL;
}

/* Another number of this process that names ring r's eventfd (a dup() the
 * program made and has not used yet), besides fd and the ring's own: marked
 * as the ring's (an alias), or -1 when there is none. Looked for in
 * /proc/self/fd, eventfds only: for a close, not on a fast path. */
static int emu_alias_other(struct emu_ring *r, int fd)
{
	long id = ring_efd_id(r);
	DIR *d = id >= 0 ? opendir("/proc/self/fd") : NULL;
	int found = -1;
	if (!d)
		return -1;
	for (struct dirent *e; found < 0 && (e = readdir(d));) {
		char path[64], link[64];
		int n = atoi(e->d_name);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || n == fd || n == r->ifd || n == dirfd(d) ||
		    n >= EMU_MAX_FD)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
		ssize_t len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (strstr(link, "[eventfd]") && efd_id(n) == id)
			found = n;
	}
	closedir(d);
	if (found >= 0) {
		atomic_store_explicit(&r->aliased, 1, memory_order_relaxed);
		atomic_store_explicit(&emu_tab[found], r, memory_order_release);
	}
	return found;
}

/* The library's own descriptors (the ring's private eventfd, the reactor's
 * wake-up, dups of registered files) go above EMU_FD_BASE, out of the way of
 * the numbers a program expects to get back from open() or to find unused. */
int emu_fd_high(int fd)
{
	if (fd < 0 || fd >= EMU_FD_BASE)
		return fd;
	int h = fcntl(fd, F_DUPFD_CLOEXEC, EMU_FD_BASE);
	if (h < 0)
		return fd;                /* a low RLIMIT_NOFILE: keep the low one */
	close(fd);
	return h;
}

int emu_forced(void)
{
	const char *e = getenv("URING_EMULATE");
	return e && e[0] == '1';
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME ms milliseconds from now (pthread_cond_timedwait, timedjoin). */
struct timespec realtime_in_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Our pid for process_vm_readv/writev, asked once (glibc no longer caches
 * getpid(): it was one more system call per copy); a fork()ed child asks again. */
static _Atomic pid_t self_pid;

static void self_pid_forget(void)
{
	atomic_store_explicit(&self_pid, 0, memory_order_relaxed);
}

static void self_pid_once(void)
{
	pthread_atfork(NULL, NULL, self_pid_forget);
}

static pid_t self(void)
{
	pid_t p = atomic_load_explicit(&self_pid, memory_order_relaxed);
	if (!p) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		pthread_once(&once, self_pid_once);
		p = getpid();
		atomic_store_explicit(&self_pid, p, memory_order_relaxed);
	}
	return p;
}

/* Copy from/to application memory with the kernel's checks: -EFAULT for a bad
 * pointer instead of a crash. */
int ucopy(void *dst, const void *src, size_t n)
{
	if (!n)
		return 0;
	struct iovec l = { dst, n }, rm = { (void *)src, n };
	ssize_t r = process_vm_readv(self(), &l, 1, &rm, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
		memcpy(dst, src, n);    /* no way to check here: see DROPIN.md */
		return 0;
	}
	return -EFAULT;
}

int uwrite(void *dst, const void *src, size_t n)
{
	if (!n)
		return 0;
	struct iovec l = { (void *)src, n }, rm = { dst, n };
	ssize_t r = process_vm_writev(self(), &l, 1, &rm, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
		memcpy(dst, src, n);
		return 0;
	}
	return -EFAULT;
}

/* ---- memory layout (offsets handed out in io_uring_params) ---- */

#define OFF_SQ_HEAD 0
#define OFF_SQ_TAIL 64
#define OFF_CQ_HEAD 128
#define OFF_CQ_TAIL 192
#define OFF_SQ_MASK 256
#define OFF_SQ_ENTRIES 260
#define OFF_CQ_MASK 264
#define OFF_CQ_ENTRIES 268
#define OFF_SQ_FLAGS 272
#define OFF_SQ_DROPPED 276
#define OFF_CQ_FLAGS 280
#define OFF_CQ_OVERFLOW 284
#define OFF_CQES 320

#define EMU_SETUP_FLAGS (IORING_SETUP_IOPOLL | IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF | IORING_SETUP_CQSIZE | \
	IORING_SETUP_CLAMP | IORING_SETUP_ATTACH_WQ | IORING_SETUP_R_DISABLED | IORING_SETUP_SUBMIT_ALL | \
	IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | \
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

#define EMU_FEATURES (IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP | IORING_FEAT_SUBMIT_STABLE | \
	IORING_FEAT_RW_CUR_POS | IORING_FEAT_CUR_PERSONALITY | IORING_FEAT_FAST_POLL | IORING_FEAT_POLL_32BITS | \
	IORING_FEAT_SQPOLL_NONFIXED | IORING_FEAT_EXT_ARG | IORING_FEAT_NATIVE_WORKERS | \
	IORING_FEAT_RSRC_TAGS | IORING_FEAT_CQE_SKIP | IORING_FEAT_LINKED_FILE)

static unsigned roundup_pow2(unsigned v)
{
	unsigned p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

static void emu_free(struct emu_ring *r)
{
	while (r->freelist) {
		struct ureq *q = r->freelist;
		r->freelist = q->qnext;
		free(q);
	}
	while (r->live) {
		struct ureq *q = r->live;
		r->live = q->next;
		exec_args_free(q);        /* a SEND_ZC's address, waiting for room */
		if (q->mshot && q->ms_dup)
			close(q->ms_fd);
		free(q);
	}
	free(r->ms);
	reactor_free(r);
	free(r->udh);
	while (r->ovf_head) {
		struct ovf *o = r->ovf_head;
		r->ovf_head = o->next;
		free(o);
	}
	for (unsigned i = 0; i < r->ngroups; i++)
		free(r->groups[i].bufs);
	free(r->groups);
	free(r->bufs);
	free(r->buf_tags);
	free(r->files);
	free(r->file_tags);
	free(r->fast_mem);
	if (r->mem)
		munmap(r->mem, (char *)r->sqes - (char *)r->mem + r->sqes_sz);
	xproc_free(r);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->sq_lock);
	pthread_cond_destroy(&r->wq_cond);
	pthread_cond_destroy(&r->sqp_cond);
	pthread_cond_destroy(&r->sqspace_cond);
	pthread_cond_destroy(&r->ms_cond);
	free(r);
}

void emu_put(struct emu_ring *r)
{
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		emu_free(r);
}

/* Online CPUs, asked once per process (sysconf reads a /sys file each time):
 * it only bounds the worker threads. At least 1. */
static unsigned ncpus(void)
{
	static _Atomic unsigned n;
	unsigned v = atomic_load_explicit(&n, memory_order_relaxed);
	if (!v) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		v = c > 0 ? (unsigned)c : 1;
		atomic_store_explicit(&n, v, memory_order_relaxed);
	}
	return v;
}

/* The bound on worker threads (r->lock held): the program's
 * (IORING_REGISTER_IOWQ_MAX_WORKERS), else 4 per CPU, at most 64 and at most
 * the SQ size, worked out the first time a worker is wanted, so a ring that
 * never needs one never asks for the CPU count. */
unsigned emu_wq_max_locked(struct emu_ring *r)
{
	if (!r->wq_max) {
		unsigned m = 4 * ncpus();
		if (m > 64)
			m = 64;
		if (m > r->sq_entries && r->sq_entries >= 4)
			m = r->sq_entries;
		r->wq_max = m;
	}
	return r->wq_max;
}

int emu_setup(unsigned entries, struct io_uring_params *up)
{
	return emu_setup_from(entries, up, 0);
}

/* emu_setup whose ring fd is at least min_fd and below EMU_FD_BASE (the
 * system-call front's range, sysfront.c); when none is free, a virtual
 * number (EMU_VFD_LO..), -EMFILE when those are taken too. */
int emu_setup_from(unsigned entries, struct io_uring_params *up, int min_fd)
{
	struct io_uring_params p;
	if (ucopy(&p, up, sizeof(p)) < 0)
		return -EFAULT;
	for (int i = 0; i < 3; i++)
		if (p.resv[i])
			return -EINVAL;
	if (p.flags & ~EMU_SETUP_FLAGS)
		return -EINVAL;                      /* unknown flags */
	if ((p.flags & IORING_SETUP_SQ_AFF) && !(p.flags & IORING_SETUP_SQPOLL))
		return -EINVAL;
	/* the poller's CPU: whether the process may run there (its cpuset, not the
	 * calling thread's affinity: the kernel's check) is found when the poller is
	 * created pinned to it (emu_thread_start with its cpu: EINVAL) */
	if ((p.flags & IORING_SETUP_SQ_AFF) && p.sq_thread_cpu >= CPU_SETSIZE)
		return -EINVAL;
	if ((p.flags & IORING_SETUP_DEFER_TASKRUN) &&
	    (!(p.flags & IORING_SETUP_SINGLE_ISSUER) || (p.flags & IORING_SETUP_SQPOLL)))
		return -EINVAL;
	if ((p.flags & IORING_SETUP_TASKRUN_FLAG) &&
	    !(p.flags & (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_DEFER_TASKRUN)))
		return -EINVAL;
	if ((p.flags & IORING_SETUP_ATTACH_WQ) && !emu_find_checked((int)p.wq_fd))
		return -EINVAL;
	if (!entries)
		return -EINVAL;
	if (entries > EMU_MAX_ENTRIES) {
		if (!(p.flags & IORING_SETUP_CLAMP))
			return -EINVAL;
		entries = EMU_MAX_ENTRIES;
	}
	unsigned sq = roundup_pow2(entries), cq;
	if (p.flags & IORING_SETUP_CQSIZE) {
		if (!p.cq_entries)
			return -EINVAL;
		cq = p.cq_entries;
		if (cq > EMU_MAX_CQ) {
			if (!(p.flags & IORING_SETUP_CLAMP))
				return -EINVAL;
			cq = EMU_MAX_CQ;
		}
		cq = roundup_pow2(cq);
		if (cq < sq)
			return -EINVAL;
	} else {
		cq = 2 * sq;
	}

	struct emu_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	atomic_init(&r->refs, 1);
	/* hashed user_data (cancel, POLL/TIMEOUT_REMOVE): a chain per 2 CQEs, 64 to 4096 */
	r->udh_bits = 6;
	while (r->udh_bits < EMU_UDH_MAX_BITS && (1u << (r->udh_bits + 1)) <= cq)
		r->udh_bits++;
	r->udh = calloc(1u << r->udh_bits, sizeof(*r->udh));
	if (!r->udh) {
		free(r);
		return -ENOMEM;
	}
	r->fd = r->ifd = r->evfd = r->evfd_async = r->wake_fd = r->ep_fd = r->pp_fd = -1;
	r->rfd_signalled = &r->rfd_own;
	r->xslot = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->sq_lock, NULL);
	pthread_cond_init(&r->wq_cond, NULL);
	pthread_cond_init(&r->sqp_cond, NULL);
	pthread_cond_init(&r->sqspace_cond, NULL);
	pthread_cond_init(&r->ms_cond, NULL);
	r->flags = p.flags;
	r->fb_on = kaio_batch_pays();
	r->features = EMU_FEATURES;
	r->sq_entries = sq;
	r->cq_entries = cq;
	r->sqe_size = (p.flags & IORING_SETUP_SQE128) ? 128 : 64;
	r->cqe_shift = (p.flags & IORING_SETUP_CQE32) ? 1 : 0;
	r->wq_max = 0;                         /* the default, worked out when first wanted */
	r->sq_idle_ms = p.sq_thread_idle ? p.sq_thread_idle : 1000;
	r->sq_cpu = (p.flags & IORING_SETUP_SQ_AFF) ? (int)p.sq_thread_cpu : -1;
	r->disabled = !!(p.flags & IORING_SETUP_R_DISABLED);

	size_t cqes_sz = (size_t)cq * (16u << r->cqe_shift);
	size_t array_off = OFF_CQES + cqes_sz;
	r->mem_sz = array_off + sq * sizeof(unsigned);
	r->sqes_sz = (size_t)sq * r->sqe_size;
	int err = -ENOMEM;
	/* MAP_SHARED as the kernel's rings: a fork()ed child sees the same ring (xproc.c).
	 * One mapping, the SQEs on the pages after the rings: each shared mapping is a
	 * shmem object to create and free (two cost 18 us more CPU per setup + exit
	 * than two private ones, one 7 us) */
	size_t ring_pages = (r->mem_sz + (size_t)getpagesize() - 1) & ~((size_t)getpagesize() - 1);
	r->mem = mmap(NULL, ring_pages + r->sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->mem == MAP_FAILED) {
		r->mem = NULL;
		goto fail;
	}
	r->sqes = (struct io_uring_sqe *)((char *)r->mem + ring_pages);
	char *m = r->mem;
	r->sq_head = (unsigned *)(m + OFF_SQ_HEAD);
	r->sq_tail = (unsigned *)(m + OFF_SQ_TAIL);
	r->sq_mask = (unsigned *)(m + OFF_SQ_MASK);
	r->sq_entries_p = (unsigned *)(m + OFF_SQ_ENTRIES);
	r->sq_flags = (unsigned *)(m + OFF_SQ_FLAGS);
	r->sq_dropped = (unsigned *)(m + OFF_SQ_DROPPED);
	r->sq_array = (unsigned *)(m + array_off);
	r->cq_head = (unsigned *)(m + OFF_CQ_HEAD);
	r->cq_tail = (unsigned *)(m + OFF_CQ_TAIL);
	r->cq_mask = (unsigned *)(m + OFF_CQ_MASK);
	r->cq_entries_p = (unsigned *)(m + OFF_CQ_ENTRIES);
	r->cq_flags = (unsigned *)(m + OFF_CQ_FLAGS);
	r->cq_overflow = (unsigned *)(m + OFF_CQ_OVERFLOW);
	r->cqes = (struct io_uring_cqe *)(m + OFF_CQES);
	*r->sq_mask = sq - 1;
	*r->sq_entries_p = sq;
	*r->cq_mask = cq - 1;
	*r->cq_entries_p = cq;

	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	int virt = 0;
	if (min_fd > 0 && (fd < min_fd || fd >= EMU_FD_BASE)) {
		int h = fcntl(fd, F_DUPFD_CLOEXEC, min_fd), e = errno;
		if (h >= EMU_FD_BASE || (h < 0 && (e == EMFILE || e == EINVAL))) {
			/* the range is full (or past RLIMIT_NOFILE): a virtual number,
			 * claimed below; the program never sees this eventfd, only our ifd */
			if (h >= 0)
				close(h);
			virt = 1;
			r->ifd = emu_fd_high(fd);
		} else {
			close(fd);
			if (h < 0) {
				err = -e;
				goto fail;
			}
		}
		fd = virt ? -1 : h;
	}
	if (fd >= EMU_MAX_FD) {
		int low = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		if (low < 0 || low >= EMU_MAX_FD) {
			if (low >= 0)
				close(low);
			err = -EMFILE;
			goto fail;
		}
		fd = low;
	}
	r->fd = fd;
	r->efd_id = EMU_EFD_ID_UNKNOWN;        /* ring_efd_id() asks when it matters */
	/* Our own descriptor of the same eventfd: the ring keeps working if the
	 * program closes its ring fd and goes on with a dup() of it. */
	if (!virt)
		r->ifd = emu_fd_high(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	if (r->ifd < 0) {
		err = -errno;
		goto fail;
	}

	memset(&p.sq_off, 0, sizeof(p.sq_off));
	memset(&p.cq_off, 0, sizeof(p.cq_off));
	p.sq_entries = sq;
	p.cq_entries = cq;
	p.features = r->features;
	p.sq_thread_idle = r->sq_idle_ms;
	p.sq_off.head = OFF_SQ_HEAD;
	p.sq_off.tail = OFF_SQ_TAIL;
	p.sq_off.ring_mask = OFF_SQ_MASK;
	p.sq_off.ring_entries = OFF_SQ_ENTRIES;
	p.sq_off.flags = OFF_SQ_FLAGS;
	p.sq_off.dropped = OFF_SQ_DROPPED;
	p.sq_off.array = (uint32_t)array_off;
	p.cq_off.head = OFF_CQ_HEAD;
	p.cq_off.tail = OFF_CQ_TAIL;
	p.cq_off.ring_mask = OFF_CQ_MASK;
	p.cq_off.ring_entries = OFF_CQ_ENTRIES;
	p.cq_off.overflow = OFF_CQ_OVERFLOW;
	p.cq_off.cqes = OFF_CQES;
	p.cq_off.flags = OFF_CQ_FLAGS;
	r->params = p;
	if (uwrite(up, &p, sizeof(p)) < 0) {
		err = -EFAULT;
		goto fail;
	}
	if (virt && (fd = r->fd = vfd_claim(r)) < 0) {
		err = fd;
		goto fail;
	}
	if ((p.flags & IORING_SETUP_SQPOLL) && (err = sqpoll_start(r)) < 0) {
		atomic_store_explicit(tab_slot(fd), NULL, memory_order_release);
		goto fail;
	}
	xproc_track(r);
	atomic_store_explicit(tab_slot(fd), r, memory_order_release);
	return fd;
fail:
	if (r->fd >= 0 && !emu_vfd(r->fd))
		close(r->fd);
	if (r->ifd >= 0)
		close(r->ifd);
	emu_free(r);
	return err;
}

int emu_mmap(struct emu_ring *r, struct io_uring_params *p, struct io_uring *ring)
{
	(void)p;
	api_fill_ring(ring, &r->params, r->mem, r->mem, r->mem_sz, r->mem_sz, r->sqes);
	ring->features = r->features;
	return 0;
}

int emu_close(struct emu_ring *r)
{
	if (atomic_load_explicit(&r->aliased, memory_order_relaxed)) {
		for (int i = 0; i < EMU_MAX_FD + EMU_VFD_N; i++)   /* the fd and its dup()s (emu_alias) */
			if (atomic_load_explicit(&emu_tab[i], memory_order_relaxed) == r)
				atomic_store_explicit(&emu_tab[i], NULL, memory_order_release);
	} else {
		struct emu_ring *want = r;           /* only its own fd names it */
		atomic_compare_exchange_strong(tab_slot(r->fd), &want, NULL);
	}
	xproc_untrack(r);
	if (r->xs)
		xproc_leave(r, 1);    /* shared: what this process runs is cancelled, it leaves */
	pthread_mutex_lock(&r->lock);
	r->dying = 1;
	pthread_mutex_unlock(&r->lock);
	sqpoll_stop(r);
	reactor_stop(r);
	wq_stop(r);
	kaio_fini(r);
	long id = ring_efd_id(r);
	if (!emu_vfd(r->fd) && (id == -1 || efd_id(r->fd) == id))
		close(r->fd);           /* not a number the program closed and got back */
	close(r->ifd);
	if (r->evfd >= 0)
		close(r->evfd);
	for (unsigned i = 0; i < r->nfiles; i++)
		if (r->files[i].fd >= 0)
			close(r->files[i].fd);
	r->nfiles = 0;
	emu_put(r);
	return 0;
}

/* close(fd) of a program under the system-call front (sysfront.c): a ring's
 * last number closes the ring, as the kernel's ring goes with its last file
 * (a dup() the program made counts, used or not); another number is only
 * closed. 0 or -errno. */
int emu_close_number(int fd)
{
	struct emu_ring *r = emu_find(fd);
	if (r && !atomic_load_explicit(&r->aliased, memory_order_relaxed))
		emu_alias_other(r, fd);
	if (r && atomic_load_explicit(&r->aliased, memory_order_relaxed)) {
		int others = 0;
		for (int i = 0; i < EMU_MAX_FD && !others; i++)
			others = i != fd && atomic_load_explicit(&emu_tab[i], memory_order_relaxed) == r;
		if (others) {
			struct emu_ring *want = r;
			atomic_compare_exchange_strong(&emu_tab[fd], &want, NULL);
			r = NULL;
		}
	}
	if (r) {
		if (fd != r->fd) {
			struct emu_ring *want = r;
			atomic_compare_exchange_strong(tab_slot(fd), &want, NULL);
			close(fd);
		}
		return emu_close(r);
	}
	return close(fd) < 0 ? -errno : 0;
}

/* ---- completions ---- */

static void cq_write(struct emu_ring *r, unsigned tail, uint64_t ud, int32_t res, uint32_t cflags,
		     const uint64_t *big)
{
	struct io_uring_cqe *c = &r->cqes[(tail & (r->cq_entries - 1)) << r->cqe_shift];
	c->user_data = ud;
	c->res = res;
	c->flags = cflags;
	if (r->cqe_shift) {
		c->big_cqe[0] = big ? big[0] : 0;
		c->big_cqe[1] = big ? big[1] : 0;
	}
}

/* A ring shared across fork() posts CQEs and clears the eventfd under a
 * process-shared lock (taken inside r->lock, never the other way); a ring of
 * one process pays one predictable branch. -EBUSY: another process keeps the
 * lock (xproc.c): a CQE goes to the overflow list instead. */
static inline int cq_lock(struct emu_ring *r)
{
	if (__builtin_expect(r->xs != NULL, 0))
		return xproc_cq_lock(r);
	return 0;
}

static inline void cq_unlock(struct emu_ring *r)
{
	if (__builtin_expect(r->xs != NULL, 0))
		xproc_cq_unlock(r);
}

static void ring_efd_signal(struct emu_ring *r)
{
	if (!*r->rfd_signalled) {
		__atomic_store_n(r->rfd_signalled, 1, __ATOMIC_RELAXED);   /* enter peeks */
		uint64_t one = 1;
		ssize_t w = write(r->ifd, &one, sizeof(one));
		(void)w;
	}
}

void emu_signal_efd(struct emu_ring *r)
{
	ring_efd_signal(r);
}

/* Post one CQE (ring lock held). async: not posted inline at submission. */
void emu_post(struct emu_ring *r, uint64_t ud, int32_t res, uint32_t cflags, int async)
{
	if (r->dying)
		return;                 /* the ring fd may be closed: nobody can reap */
	int locked = cq_lock(r) == 0;
	unsigned tail = *r->cq_tail;
	unsigned head = __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE);
	if (locked && !r->ovf_head && tail - head < r->cq_entries) {
		cq_write(r, tail, ud, res, cflags, NULL);
		__atomic_store_n(r->cq_tail, tail + 1, __ATOMIC_RELEASE);
	} else {
		struct ovf *o = calloc(1, sizeof(*o));
		if (!o) {
			__atomic_fetch_add(r->cq_overflow, 1, __ATOMIC_RELAXED);
		} else {
			o->user_data = ud;
			o->res = res;
			o->flags = cflags;
			if (r->ovf_tail)
				r->ovf_tail->next = o;
			else
				r->ovf_head = o;
			r->ovf_tail = o;
			r->novf++;
			if (r->xs)
				xproc_ovf_count(r, 1);
			__atomic_fetch_or(r->sq_flags, IORING_SQ_CQ_OVERFLOW, __ATOMIC_SEQ_CST);
		}
	}
	ring_efd_signal(r);
	if (r->evfd >= 0 && (!r->evfd_async || async) &&
	    !(__atomic_load_n(r->cq_flags, __ATOMIC_RELAXED) & IORING_CQ_EVENTFD_DISABLED)) {
		uint64_t one = 1;
		ssize_t w = write(r->evfd, &one, sizeof(one));
		(void)w;
	}
	if (locked)
		cq_unlock(r);
}


/* 1 if a CQE posted now would go to the overflow list (ring lock held). */
int emu_cq_full_locked(struct emu_ring *r)
{
	return r->ovf_head || *r->cq_tail - __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE) >= r->cq_entries;
}

/* Move overflowed CQEs into the CQ as room allows (ring lock held): 0, or
 * -EBUSY if another process keeps the CQ lock (nothing moved). */
int emu_flush_overflow_locked(struct emu_ring *r)
{
	if (!r->ovf_head || r->dying)
		return 0;
	if (cq_lock(r) < 0)
		return -EBUSY;
	unsigned tail = *r->cq_tail;
	unsigned head = __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE);
	while (r->ovf_head && tail - head < r->cq_entries) {
		struct ovf *o = r->ovf_head;
		cq_write(r, tail, o->user_data, o->res, o->flags, NULL);
		tail++;
		r->ovf_head = o->next;
		r->novf--;
		if (r->xs)
			xproc_ovf_count(r, -1);
		free(o);
	}
	if (!r->ovf_head) {
		r->ovf_tail = NULL;
		/* shared: the flag stays while another process holds some */
		if (!r->xs || !xproc_ovf_count(r, 0))
			__atomic_fetch_and(r->sq_flags, ~IORING_SQ_CQ_OVERFLOW, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(r->cq_tail, tail, __ATOMIC_RELEASE);
	ring_efd_signal(r);
	cq_unlock(r);
	return 0;
}

/* Another process asks (xproc.c): move what overflowed here into the CQ. */
void emu_flush_overflow(struct emu_ring *r)
{
	pthread_mutex_lock(&r->lock);
	emu_flush_overflow_locked(r);
	pthread_mutex_unlock(&r->lock);
}

static unsigned cq_ready(struct emu_ring *r)
{
	return __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) - __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE);
}

/* Read the ring's eventfd to zero without blocking, whatever a process
 * sharing the file (fork) did to its O_NONBLOCK: RWF_NOWAIT, or read() where
 * the kernel has no RWF_NOWAIT for an eventfd (before 5.11). */
static void efd_drain(int fd)
{
	static int no_nowait;
	uint64_t v;
	struct iovec io = { &v, sizeof(v) };
	if (!__atomic_load_n(&no_nowait, __ATOMIC_RELAXED)) {
		if (preadv2(fd, &io, 1, -1, RWF_NOWAIT) >= 0 || (errno != EOPNOTSUPP && errno != EINVAL && errno != ENOSYS))
			return;
		__atomic_store_n(&no_nowait, 1, __ATOMIC_RELAXED);
	}
	ssize_t rd = read(fd, &v, sizeof(v));
	(void)rd;
}

/* Cleared without the CQ lock if another process keeps it: a wake-up lost
 * so is found by the waiter's next look (wait_cq). */
static void efd_clear_locked(struct emu_ring *r)
{
	if (r->dying)
		return;
	int locked = cq_lock(r) == 0;
	efd_drain(r->ifd);
	__atomic_store_n(r->rfd_signalled, 0, __ATOMIC_RELAXED);
	if (locked)
		cq_unlock(r);
}

/* Multishot ACCEPT/RECVs another thread (the reactor) is running post their
 * CQEs before a wait that has enough returns: the kernel runs a woken
 * multishot to the end in the waiter's own task work. A run never blocks and
 * ends by itself (EAGAIN, or at the latest when its CQEs fill the CQ nobody
 * reaps meanwhile); the wait is bounded all the same, by the wait's deadline
 * and 1 s (a 20 ms bound was not enough with the machine loaded: liburing's
 * recv-multishot saw a run cut short). Ring lock held. */
static void ms_settle_locked(struct emu_ring *r, uint64_t deadline)
{
	uint64_t until = now_ns() + 1000000000ull;
	if (deadline && deadline < until)
		until = deadline;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t now = now_ns();
	if (until <= now)
		return;
	uint64_t abs = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec + (until - now);
	struct timespec ts = { (time_t)(abs / 1000000000ull), (long)(abs % 1000000000ull) };
	while (r->ms_running && !r->dying)
		if (pthread_cond_timedwait(&r->ms_cond, &r->lock, &ts) == ETIMEDOUT)
			break;
}

/* Run what the multishot set says was woken, here, and let the runs other
 * threads have started post their CQEs (ms_settle_locked): what the CQ holds
 * when a look at it returns is what the kernel's ring would hold, whose task
 * work runs on the way back from the program's last system call (the
 * reactor may not have been scheduled since). The peek and wait paths of
 * api.c call it while multishots are armed. */
void emu_mshot_run(struct emu_ring *r)
{
	for (;;) {
		struct ureq *run = NULL;
		pthread_mutex_lock(&r->lock);
		reactor_mshot_harvest_locked(r, &run);
		if (!run && r->ms_running && !r->dying)
			ms_settle_locked(r, 0);
		pthread_mutex_unlock(&r->lock);
		if (!run)
			return;
		exec_issue_list(run, CTX_INLINE);
	}
}

/* Wait until min CQEs are ready; deadline 0 = none. 0, -ETIME or -EINTR (0
 * when the CQ holds any CQE then, fewer than min, as the kernel's), or
 * -EBUSY when too few are ready and this process's overflowed CQEs cannot
 * be moved in (another process keeps the CQ lock: xproc.c), as the kernel's
 * wait answers when it cannot flush its overflow. Multishots their set says
 * were woken run here first (as the kernel runs its task work when the
 * program waits), not only on the reactor thread. A ring shared across fork
 * is looked at every EMU_SHARED_LOOK_MS at least: another process may have
 * eaten the eventfd's count (it shares the file) or set the shared flag.
 * A TIMEOUT that expires or meets its count while it waits ends the wait
 * with fewer than min, as the kernel's (its cq_timeouts). */
static int wait_cq(struct emu_ring *r, unsigned min, uint64_t deadline, const void *sig, size_t sigsz)
{
	sigset_t mask, *maskp = NULL;
	if (min > r->cq_entries)
		min = r->cq_entries;
	int flushed_others = 0, first = 1;
	unsigned timeouts = 0;
	for (;;) {
		struct ureq *run = NULL;
		pthread_mutex_lock(&r->lock);
		if (first)
			timeouts = r->cq_timeouts, first = 0;
		if (r->aio_inflight)
			kaio_reap_locked(r, &run);
		int stuck = emu_flush_overflow_locked(r);
		if (r->ms_armed)
			reactor_mshot_harvest_locked(r, &run);
		int enough = cq_ready(r) >= min || r->dying || r->cq_timeouts != timeouts;
		if (stuck < 0 && !enough && !run) {
			pthread_mutex_unlock(&r->lock);
			return stuck;
		}
		if (!enough && !run && !flushed_others && r->xs && xproc_ovf_count(r, 0) > (int)r->novf) {
			/* CQEs of another process wait in its overflow list: it moves
			 * them in (its listener), as the kernel's reaper would */
			pthread_mutex_unlock(&r->lock);
			xproc_flush_others(r);
			flushed_others = 1;
			continue;
		}
		if (!enough && !run) {
			/* Clear, then look again: a CQE or AIO completion after the
			 * clear writes the eventfd again, so ppoll cannot miss it. */
			efd_clear_locked(r);
			if (r->aio_inflight)
				kaio_reap_locked(r, &run);
			enough = cq_ready(r) >= min || r->cq_timeouts != timeouts;
		}
		if (enough && !run && r->ms_running && !r->dying)
			ms_settle_locked(r, deadline);
		pthread_mutex_unlock(&r->lock);
		if (run) {
			exec_issue_list(run, CTX_INLINE);
			continue;
		}
		if (enough)
			return 0;
		if (sig && !maskp) {
			/* the wait's signal mask, read when it would wait, as the kernel's (a
			 * wait for CQEs that are there never looks at it; one whose time is up
			 * does, before its -ETIME) */
			if (sigsz != _NSIG / 8)
				return -EINVAL;
			if (ucopy(&mask, sig, _NSIG / 8) < 0)
				return -EFAULT;
			maskp = &mask;
		}
		struct timespec ts, *tsp = NULL;
		if (deadline || r->xs) {
			uint64_t now = now_ns(), d = EMU_SHARED_LOOK_MS * 1000000ull;
			if (deadline && now >= deadline)
				return cq_ready(r) ? 0 : -ETIME;
			if (deadline && (!r->xs || deadline - now < d))
				d = deadline - now;
			ts.tv_sec = (time_t)(d / 1000000000ull);
			ts.tv_nsec = (long)(d % 1000000000ull);
			tsp = &ts;
		}
		struct pollfd pfd = { r->ifd, POLLIN, 0 };
		int pr = ppoll(&pfd, 1, tsp, maskp);
		flushed_others = 0;          /* once per wake-up: more may have overflowed there */
		if (pr < 0 && errno == EINTR)
			return cq_ready(r) ? 0 : -EINTR;
	}
}

#define ENTER_FLAGS (IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP | IORING_ENTER_SQ_WAIT | \
	IORING_ENTER_EXT_ARG)

/*
 * The wait's arguments of io_uring_enter, which the kernel reads after it has
 * submitted, and only for GETEVENTS (an error then is the enter's answer only
 * when nothing was submitted): EXT_ARG's io_uring_getevents_arg (its sigmask,
 * given to wait_cq unread, and its timeout), else arg as a plain sigmask.
 */
static int wait_args(unsigned flags, const void *arg, size_t argsz, const void **sig, size_t *sigsz,
		     uint64_t *deadline)
{
	*sig = arg;
	*sigsz = argsz;
	*deadline = 0;
	if (!(flags & IORING_ENTER_EXT_ARG))
		return 0;
	struct io_uring_getevents_arg ga;
	if (argsz != sizeof(ga))
		return -EINVAL;
	if (ucopy(&ga, arg, sizeof(ga)) < 0)
		return -EFAULT;
	*sig = (const void *)(uintptr_t)ga.sigmask;
	*sigsz = ga.sigmask_sz;
	if (ga.ts) {
		struct __kernel_timespec kts;
		if (ucopy(&kts, (void *)(uintptr_t)ga.ts, sizeof(kts)) < 0)
			return -EFAULT;
		if (kts.tv_sec < 0 || kts.tv_nsec < 0 || kts.tv_nsec >= 1000000000)
			return -EINVAL;
		*deadline = now_ns() + (uint64_t)kts.tv_sec * 1000000000ull + (uint64_t)kts.tv_nsec;
		if (!*deadline)
			*deadline = 1;
	}
	return 0;
}

int emu_enter(struct emu_ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
	      const void *arg, size_t argsz)
{
	if (flags & ~ENTER_FLAGS)
		return -EINVAL;
	if (r->disabled)
		return -EBADFD;
	int submitted = 0;
	if (r->flags & IORING_SETUP_SQPOLL) {
		if (flags & IORING_ENTER_SQ_WAKEUP) {
			pthread_mutex_lock(&r->lock);
			if (r->sqp_sleeping)
				pthread_cond_signal(&r->sqp_cond);
			pthread_mutex_unlock(&r->lock);
		}
		if (flags & IORING_ENTER_SQ_WAIT) {
			pthread_mutex_lock(&r->lock);
			while (!r->dying && __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) -
			       __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE) >= r->sq_entries) {
				if (r->sqp_sleeping)
					pthread_cond_signal(&r->sqp_cond);
				pthread_cond_wait(&r->sqspace_cond, &r->lock);
			}
			pthread_mutex_unlock(&r->lock);
		}
		submitted = (int)to_submit;
	} else if (to_submit) {
		int err = 0;
		if (__builtin_expect(r->xs != NULL, 0) && r->xslot < 0 && (err = xproc_join(r)) < 0)
			return err;
		pthread_mutex_lock(&r->sq_lock);
		if (r->xs && (err = xproc_sq_lock(r)) < 0) {
			pthread_mutex_unlock(&r->sq_lock);
			return err;          /* another process keeps the SQ: -EAGAIN */
		}
		submitted = (int)exec_submit(r, to_submit, &err);
		if (r->xs)
			xproc_sq_unlock(r);
		pthread_mutex_unlock(&r->sq_lock);
		if (!submitted && err)
			return err;
	}
	int ret = 0;
	if (flags & IORING_ENTER_GETEVENTS) {
		const void *sig;
		size_t sigsz;
		uint64_t deadline;
		ret = wait_args(flags, arg, argsz, &sig, &sigsz, &deadline);
		if (!ret && (min_complete || r->ovf_head || r->aio_inflight ||
			     __atomic_load_n(&r->ms_armed, __ATOMIC_RELAXED) || (r->xs && xproc_ovf_count(r, 0))))
			ret = wait_cq(r, min_complete, deadline, sig, sigsz);
	}
	if (__atomic_load_n(r->rfd_signalled, __ATOMIC_RELAXED) && !cq_ready(r)) {
		struct ureq *run = NULL;
		pthread_mutex_lock(&r->lock);
		if (!cq_ready(r) && !r->ovf_head) {
			/* The clear may eat the kernel's signal of an AIO completion
			 * (IOCB_FLAG_RESFD) that another thread sleeps for: reap after it,
			 * as wait_cq does, so that its CQE signals the ring fd again. */
			efd_clear_locked(r);
			if (r->aio_inflight)
				kaio_reap_locked(r, &run);
		}
		pthread_mutex_unlock(&r->lock);
		if (run)
			exec_issue_list(run, CTX_INLINE);
	}
	return submitted ? submitted : ret;
}

/* ---- SQPOLL ---- */

/* The poller sleeps 10 ms at most (ring lock held), or until woken. */
static void sqp_nap_locked(struct emu_ring *r)
{
	struct timespec ts = realtime_in_ms(10);
	pthread_cond_timedwait(&r->sqp_cond, &r->lock, &ts);
}

static void *sqp_main(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	uint64_t idle_ns = (uint64_t)r->sq_idle_ms * 1000000ull, last = now_ns();
	for (;;) {
		if (r->dying)
			break;
		unsigned n = __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) - *r->sq_head;
		if (n) {
			int err = 0;
			pthread_mutex_lock(&r->sq_lock);
			if (r->xs && xproc_sq_lock(r) < 0) {
				/* another process keeps the SQ: look again in 10 ms */
				pthread_mutex_unlock(&r->sq_lock);
				pthread_mutex_lock(&r->lock);
				sqp_nap_locked(r);
				pthread_mutex_unlock(&r->lock);
				continue;
			}
			exec_submit(r, n, &err);
			if (r->xs)
				xproc_sq_unlock(r);
			pthread_mutex_unlock(&r->sq_lock);
			pthread_mutex_lock(&r->lock);
			pthread_cond_broadcast(&r->sqspace_cond);
			pthread_mutex_unlock(&r->lock);
			last = now_ns();
			continue;
		}
		/* Kernel AIO in flight (O_DIRECT): post its completions here, as the
		 * kernel's SQPOLL thread runs its task work; a program that polls
		 * the CQ and never enters (fio's engine) sees them, and the poller
		 * does not sleep while they are due. */
		struct ureq *run = NULL;
		pthread_mutex_lock(&r->lock);
		int aio = r->aio_inflight;
		if (aio)
			kaio_reap_locked(r, &run);
		pthread_mutex_unlock(&r->lock);
		if (run)
			exec_issue_list(run, CTX_INLINE);
		if (aio)
			last = now_ns();
		if (now_ns() - last < idle_ns) {
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&r->lock);
		__atomic_fetch_or(r->sq_flags, IORING_SQ_NEED_WAKEUP, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!r->dying && __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) == *r->sq_head) {
			r->sqp_sleeping = 1;
			pthread_cond_broadcast(&r->sqspace_cond);
			if (r->xs) {
				/* shared: a forked process's SQ_WAKEUP cannot reach this
				 * cond; look at the SQ every 10 ms while asleep (asleep
				 * until there is work: NEED_WAKEUP stays set meanwhile) */
				while (!r->dying && __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) == *r->sq_head)
					sqp_nap_locked(r);
			} else {
				pthread_cond_wait(&r->sqp_cond, &r->lock);
			}
			r->sqp_sleeping = 0;
		}
		__atomic_fetch_and(r->sq_flags, ~IORING_SQ_NEED_WAKEUP, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&r->lock);
		last = now_ns();
	}
	return NULL;
}

/*
 * Threads created and not yet running their own code. A fork waits for none
 * (emu_threads_settle from xproc.c's fork_prepare): a thread still starting
 * inside the C library or a sanitizer's runtime may hold an allocator lock that
 * the child would inherit held. GCC 12's ASan takes none of its locks across
 * fork, and a child forked while the reactor started hung in its first calloc
 * (test_uring_fork_cancel, 3 runs in 35 under ASan).
 */
static int threads_starting;

int emu_thread_start(struct emu_ring *r, pthread_t *t, int detached, int take_ref, int cpu, void *(*fn)(void *))
{
	pthread_attr_t at;
	sigset_t all, old;
	pthread_attr_init(&at);
	if (cpu >= 0) {
		/* pinned from its start (the SQ_AFF poller); a CPU that does not exist or
		 * is outside the process's cpuset: pthread_create says EINVAL */
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_setaffinity_np(&at, sizeof(one), &one);
	}
	if (detached)
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);       /* the program's signals are not ours */
	if (take_ref)
		atomic_fetch_add(&r->refs, 1);
	__atomic_fetch_add(&threads_starting, 1, __ATOMIC_RELAXED);
	int e = pthread_create(t, &at, fn, r);
	if (e) {
		__atomic_fetch_sub(&threads_starting, 1, __ATOMIC_RELEASE);
		if (take_ref)
			atomic_fetch_sub(&r->refs, 1);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	return e;
}

void emu_thread_running(void)
{
	__atomic_fetch_sub(&threads_starting, 1, __ATOMIC_RELEASE);
}

/* Waits, at most a second, for the threads still starting (a forking thread
 * holds the rings' locks: no new one is started meanwhile). */
void emu_threads_settle(void)
{
	uint64_t until = 0;
	for (int i = 0; __atomic_load_n(&threads_starting, __ATOMIC_ACQUIRE) > 0; i++) {
		if (i < 100) {
			sched_yield();
			continue;
		}
		uint64_t now = now_ns();
		if (!until)
			until = now + 1000000000ull;
		else if (now >= until)
			return;
		usleep(100);
	}
}

/* In a forked child: none of the parent's threads is there to start. */
void emu_threads_forked(void)
{
	__atomic_store_n(&threads_starting, 0, __ATOMIC_RELAXED);
}

int sqpoll_start(struct emu_ring *r)
{
	int e = emu_thread_start(r, &r->sqp, 0, 0, r->sq_cpu, sqp_main);
	if (e)
		return -e;
	r->sqp_on = 1;
	return 0;
}

void sqpoll_stop(struct emu_ring *r)
{
	if (!r->sqp_on)
		return;
	pthread_mutex_lock(&r->lock);
	r->dying = 1;
	pthread_cond_signal(&r->sqp_cond);
	pthread_cond_broadcast(&r->sqspace_cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->sqp, NULL);
	r->sqp_on = 0;
}
