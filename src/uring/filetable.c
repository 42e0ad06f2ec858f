/* SPDX-License-Identifier: MIT */
/*
 * filetable.c - files of the emulated ring, as the kernel's io_uring/filetable.c
 * and rsrc.c: the cache of what each plain fd is (regular, socket, pipe,
 * O_DIRECT: where its I/O runs), the registered file table (FILES_UPDATE,
 * direct descriptors installed by OPENAT, ACCEPT, SOCKET, MSG_RING).
 *
 * Must never: use an fd or a table index without checking it (-EBADF,
 * -EINVAL), or trust a cached kind of an fd that was closed and reopened
 * (exec_fcache_drop on every close the library makes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "opdef.h"

static void fill_fent(int fd, struct fent *fe)
{
	struct stat st;
	fe->fd = fd;
	fe->kind = FK_OTHER;
	fe->direct = fe->nonblock = fe->wr_block = fe->whash = 0;
	if (fstat(fd, &st) == 0) {
		if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
			fe->kind = FK_REG;
		if (S_ISREG(st.st_mode)) {
			/* the inode's bucket of hashed work (io-wq hashes a regular file's
			 * inode in 64; a block device's writes are not hashed) */
			uint64_t h = ((uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 32)) * 0x9e3779b97f4a7c15ull;
			fe->whash = (uint8_t)(1 + (h >> 58));
		}
		else if (S_ISSOCK(st.st_mode))
			fe->kind = FK_SOCK;
		else if (!S_ISDIR(st.st_mode))
			fe->kind = FK_POLL;     /* pipes, ttys, eventfd, timerfd, ...: streams */
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0) {
		fe->direct = !!(fl & O_DIRECT);
		fe->nonblock = !!(fl & O_NONBLOCK);
	}
}

/*
 * Resolve an SQE's fd: fixed (an index into the registered table), else the
 * process fd, whose kind is cached by number (see DROPIN.md: a stale entry
 * only misroutes, never misreads). fixed = -1: fill from scratch.
 */
int exec_file(struct emu_ring *r, int fd, int fixed, struct fent *out)
{
	if (fixed > 0) {
		pthread_mutex_lock(&r->lock);
		int ok = (unsigned)fd < r->nfiles && r->files[fd].fd >= 0;
		if (ok)
			*out = r->files[fd];
		pthread_mutex_unlock(&r->lock);
		return ok ? 0 : -EBADF;
	}
	if (fd < 0)
		return -EBADF;
	if (fixed == 0 && fd < EMU_FCACHE && __atomic_load_n(&r->fcache[fd].valid, __ATOMIC_ACQUIRE)) {
		*out = r->fcache[fd];
		return 0;
	}
	if (fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	if (emu_find_checked(fd)) {
		/* An emulated ring: an eventfd that may be polled. */
		out->fd = fd;
		out->kind = FK_POLL;
		out->direct = 0;
		out->nonblock = 1;
		out->whash = 0;
		return 0;
	}
	fill_fent(fd, out);
	if (fixed == 0 && fd < EMU_FCACHE) {
		r->fcache[fd].fd = fd;
		r->fcache[fd].kind = out->kind;
		r->fcache[fd].direct = out->direct;
		r->fcache[fd].nonblock = out->nonblock;
		r->fcache[fd].whash = out->whash;
		__atomic_store_n(&r->fcache[fd].wr_block, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->fcache[fd].vgen, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->fcache[fd].valid, 1, __ATOMIC_RELEASE);
	}
	return 0;
}

void exec_fcache_drop(struct emu_ring *r, int fd)
{
	if (fd >= 0 && fd < EMU_FCACHE)
		__atomic_store_n(&r->fcache[fd].valid, 0, __ATOMIC_RELEASE);
}

/* Put fd (owned: closed on failure) in r's registered table at file_index idx
 * (1-based, or IORING_FILE_INDEX_ALLOC: the lowest free slot of the allocation
 * range). 0 or the allocated slot; -ENXIO no table, -EINVAL bad index, -ENFILE full. */
int exec_install_file(struct emu_ring *r, unsigned idx, int fd, const struct fent *kind)
{
	int alloc = idx == IORING_FILE_INDEX_ALLOC;
	struct fent fe;
	if (kind) {
		fe = *kind;
		fe.fd = fd;
	} else {
		fill_fent(fd, &fe);
	}
	int res;
	pthread_mutex_lock(&r->lock);
	if (!r->files || r->dying) {
		res = -ENXIO;
	} else if (alloc) {
		res = -ENFILE;
		for (unsigned k = r->alloc_lo; k < r->alloc_hi && k < r->nfiles; k++) {
			if (r->files[k].fd < 0) {
				r->files[k] = fe;
				r->file_tags[k] = 0;
				res = (int)k;
				break;
			}
		}
	} else if (idx - 1 >= r->nfiles) {
		res = -EINVAL;
	} else {
		if (r->files[idx - 1].fd >= 0)
			close(r->files[idx - 1].fd);
		r->files[idx - 1] = fe;
		r->file_tags[idx - 1] = 0;
		res = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (res < 0)
		close(fd);
	return res;
}

/* OPENAT/ACCEPT/SOCKET with file_index: the new file goes to the registered table. */
int exec_install_direct(struct ureq *q, int fd)
{
	return exec_install_file(q->r, q->sqe.file_index, fd, NULL);
}

int32_t op_files_update(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	if (s->flags & IOSQE_FIXED_FILE || s->rw_flags || s->splice_fd_in)
		return -EINVAL;
	if (!s->len)
		return -EINVAL;
	if (!q->r->files)
		return -ENXIO;
	return emu_update_files(q->r, (unsigned)s->off, (int *)(uintptr_t)s->addr, NULL, s->len);
}
