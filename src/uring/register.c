/* SPDX-License-Identifier: MIT */
/*
 * register.c - io_uring_register on the emulated ring, as the kernel's
 * io_uring/register.c: each opcode checked and handed to its room (rsrc.c for
 * buffers and files, kbuf.c for buffer rings, cancel.c for sync cancel,
 * opdef.c for the probe), the eventfd, the io-wq limits, ENABLE_RINGS and
 * the file allocation range here; what is not emulated (PERSONALITY,
 * RESTRICTIONS, RING_FDS) is -EINVAL.
 *
 * Must never: read or write the argument without ucopy()/uwrite() (-EFAULT),
 * or change a table that another process of a ring shared across fork uses
 * (each process has its own copy: -EOPNOTSUPP).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "opdef.h"

static int reg_probe(void *arg, unsigned nr)
{
	if (nr > IORING_OP_LAST)
		nr = IORING_OP_LAST;
	size_t sz = sizeof(struct io_uring_probe) + nr * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *p = calloc(1, sz);
	if (!p)
		return -ENOMEM;
	int e = ucopy(p, arg, sz);
	if (!e) {
		for (size_t i = 0; i < sz && !e; i++)
			if (((unsigned char *)p)[i])
				e = -EINVAL;
	}
	if (!e) {
		op_fill_probe(p, nr);
		e = uwrite(arg, p, sz);
	}
	free(p);
	return e;
}

/* The tables of registered files and buffers that each process keeps its own copy of. */
static int reg_table_op(unsigned op)
{
	switch (op) {
	case IORING_REGISTER_BUFFERS: case IORING_UNREGISTER_BUFFERS: case IORING_REGISTER_BUFFERS2:
	case IORING_REGISTER_BUFFERS_UPDATE: case IORING_REGISTER_FILES: case IORING_UNREGISTER_FILES:
	case IORING_REGISTER_FILES2: case IORING_REGISTER_FILES_UPDATE: case IORING_REGISTER_FILES_UPDATE2:
	case IORING_REGISTER_FILE_ALLOC_RANGE: case IORING_REGISTER_PBUF_RING: case IORING_UNREGISTER_PBUF_RING:
		return 1;
	}
	return 0;
}

int emu_register(struct emu_ring *r, unsigned op, void *arg, unsigned nr)
{
	/* The kernel has one table per ring; here each process has its copy from the fork
	 * on: a change while another process uses the ring would not reach it. Refused. */
	if (__builtin_expect(r->xs != NULL, 0) && reg_table_op(op) && xproc_others(r))
		return -EOPNOTSUPP;
	switch (op) {
	case IORING_REGISTER_BUFFERS:
		return rsrc_reg_buffers(r, arg, NULL, nr, 0);
	case IORING_UNREGISTER_BUFFERS:
		return arg || nr ? -EINVAL : rsrc_unreg_buffers(r);
	case IORING_REGISTER_BUFFERS2:
	case IORING_REGISTER_FILES2: {
		struct io_uring_rsrc_register rr;
		if (nr != sizeof(rr))
			return -EINVAL;
		if (ucopy(&rr, arg, sizeof(rr)) < 0)
			return -EFAULT;
		if (rr.resv2 || (rr.flags & ~IORING_RSRC_REGISTER_SPARSE) ||
		    ((rr.flags & IORING_RSRC_REGISTER_SPARSE) && (rr.data || rr.tags)))
			return -EINVAL;
		int sparse = !!(rr.flags & IORING_RSRC_REGISTER_SPARSE);
		if (op == IORING_REGISTER_BUFFERS2)
			return rsrc_reg_buffers(r, (void *)(uintptr_t)rr.data, (void *)(uintptr_t)rr.tags, rr.nr, sparse);
		return rsrc_reg_files(r, (void *)(uintptr_t)rr.data, (void *)(uintptr_t)rr.tags, rr.nr, sparse);
	}
	case IORING_REGISTER_BUFFERS_UPDATE:
	case IORING_REGISTER_FILES_UPDATE2: {
		struct io_uring_rsrc_update2 up;
		if (nr != sizeof(up))
			return -EINVAL;
		if (ucopy(&up, arg, sizeof(up)) < 0)
			return -EFAULT;
		if (up.resv || up.resv2)
			return -EINVAL;
		if (op == IORING_REGISTER_BUFFERS_UPDATE)
			return rsrc_update_buffers(r, up.offset, (void *)(uintptr_t)up.data, (void *)(uintptr_t)up.tags, up.nr);
		if (!r->files)
			return -ENXIO;
		return emu_update_files(r, up.offset, (void *)(uintptr_t)up.data, (void *)(uintptr_t)up.tags, up.nr);
	}
	case IORING_REGISTER_FILES:
		return rsrc_reg_files(r, arg, NULL, nr, 0);
	case IORING_UNREGISTER_FILES:
		return arg || nr ? -EINVAL : rsrc_unreg_files(r);
	case IORING_REGISTER_FILES_UPDATE: {
		struct io_uring_files_update up;
		if (!nr)
			return -EINVAL;
		if (ucopy(&up, arg, sizeof(up)) < 0)
			return -EFAULT;
		if (up.resv)
			return -EINVAL;
		if (!r->files)
			return -ENXIO;
		return emu_update_files(r, up.offset, (void *)(uintptr_t)up.fds, NULL, nr);
	}
	case IORING_REGISTER_EVENTFD:
	case IORING_REGISTER_EVENTFD_ASYNC: {
		int fd;
		if (nr != 1)
			return -EINVAL;
		if (ucopy(&fd, arg, sizeof(fd)) < 0)
			return -EFAULT;
		int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (d < 0)
			return -errno;
		d = emu_fd_high(d);
		pthread_mutex_lock(&r->lock);
		int e = 0;
		if (r->evfd >= 0) {
			e = -EBUSY;
		} else {
			r->evfd = d;
			r->evfd_async = op == IORING_REGISTER_EVENTFD_ASYNC;
		}
		pthread_mutex_unlock(&r->lock);
		if (e)
			close(d);
		return e;
	}
	case IORING_UNREGISTER_EVENTFD: {
		if (arg || nr)
			return -EINVAL;
		pthread_mutex_lock(&r->lock);
		int fd = r->evfd;
		r->evfd = -1;
		pthread_mutex_unlock(&r->lock);
		if (fd < 0)
			return -ENXIO;
		close(fd);
		return 0;
	}
	case IORING_REGISTER_PROBE:
		return reg_probe(arg, nr);
	case IORING_REGISTER_ENABLE_RINGS:
		if (!r->disabled)
			return -EBADFD;
		r->disabled = 0;
		return 0;
	case IORING_REGISTER_IOWQ_MAX_WORKERS: {
		unsigned v[2];
		if (nr != 2)
			return -EINVAL;
		if (ucopy(v, arg, sizeof(v)) < 0)
			return -EFAULT;
		pthread_mutex_lock(&r->lock);
		unsigned old = emu_wq_max_locked(r);
		if (v[0])
			r->wq_max = v[0] > 256 ? 256 : v[0];
		pthread_mutex_unlock(&r->lock);
		v[0] = v[1] = old;
		return uwrite(arg, v, sizeof(v));
	}
	case IORING_REGISTER_IOWQ_AFF: {
		/* Workers are ordinary threads of the process: the mask is checked and accepted,
		 * scheduling is left to the process's own affinity (see DROPIN.md). */
		if (!arg || !nr)
			return -EINVAL;
		char c;
		return ucopy(&c, arg, 1) < 0 ? -EFAULT : 0;
	}
	case IORING_UNREGISTER_IOWQ_AFF:
		return 0;
	case IORING_REGISTER_PBUF_RING:
		return kbuf_reg_pbuf_ring(r, arg, nr);
	case IORING_UNREGISTER_PBUF_RING:
		return kbuf_unreg_pbuf_ring(r, arg, nr);
	case IORING_REGISTER_SYNC_CANCEL: {
		struct io_uring_sync_cancel_reg reg;
		if (nr != 1)
			return -EINVAL;
		if (ucopy(&reg, arg, sizeof(reg)) < 0)
			return -EFAULT;
		return exec_sync_cancel(r, &reg);
	}
	case IORING_REGISTER_FILE_ALLOC_RANGE: {
		struct io_uring_file_index_range rg;
		if (ucopy(&rg, arg, sizeof(rg)) < 0)
			return -EFAULT;
		if (rg.resv)
			return -EINVAL;
		pthread_mutex_lock(&r->lock);
		int e = 0;
		if (!r->files)
			e = -ENXIO;
		else if (rg.off + rg.len < rg.off)
			e = -EOVERFLOW;
		else if (rg.off + rg.len > r->nfiles)
			e = -EINVAL;
		else {
			r->alloc_lo = rg.off;
			r->alloc_hi = rg.off + rg.len;
		}
		pthread_mutex_unlock(&r->lock);
		return e;
	}
	default:
		/* PERSONALITY, RESTRICTIONS, RING_FDS, ...: not emulated (DROPIN.md). */
		return -EINVAL;
	}
}
