/* SPDX-License-Identifier: MIT */
/*
 * rsrc.c - registered resources of the emulated ring, as the kernel's
 * io_uring/rsrc.c: the buffer table (io_uring_register_buffers, sparse,
 * tagged, updated) and the file table (io_uring_register_files, sparse,
 * tagged, updated by io_uring_register_files_update and FILES_UPDATE), each
 * slot's tag posted as a CQE when the slot is replaced or the table goes.
 *
 * Must never: take a buffer the application cannot read at both ends
 * (-EFAULT), keep the application's fd instead of its own dup, or read an
 * argument array without ucopy() (-EFAULT).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>
#include "opdef.h"

static void post_tag_locked(struct emu_ring *r, uint64_t tag)
{
	if (tag)
		emu_post(r, tag, 0, 0, 1);
}

static int check_buf(const struct iovec *v)
{
	if (!v->iov_base)
		return v->iov_len ? -EFAULT : 0;
	if (v->iov_len > (1ul << 30) || !v->iov_len)
		return -EFAULT;
	char c;
	if (ucopy(&c, v->iov_base, 1) < 0 || ucopy(&c, (char *)v->iov_base + v->iov_len - 1, 1) < 0)
		return -EFAULT;
	return 0;
}

int rsrc_reg_buffers(struct emu_ring *r, const struct iovec *uiov, const uint64_t *utags, unsigned nr, int sparse)
{
	if (!nr || nr > 16384)
		return -EINVAL;
	struct iovec *v = calloc(nr, sizeof(*v));
	uint64_t *tags = calloc(nr, sizeof(*tags));
	int e = 0;
	if (!v || !tags) {
		e = -ENOMEM;
		goto out;
	}
	if (!sparse && (e = ucopy(v, uiov, nr * sizeof(*v))) < 0)
		goto out;
	if (utags && (e = ucopy(tags, utags, nr * sizeof(*tags))) < 0)
		goto out;
	for (unsigned i = 0; i < nr; i++) {
		if ((e = check_buf(&v[i])) < 0)
			goto out;
		if (tags[i] && !v[i].iov_base) {
			e = -EINVAL;
			goto out;
		}
	}
	pthread_mutex_lock(&r->lock);
	if (r->bufs) {
		pthread_mutex_unlock(&r->lock);
		e = -EBUSY;
		goto out;
	}
	r->bufs = v;
	r->buf_tags = tags;
	r->nbufs = nr;
	pthread_mutex_unlock(&r->lock);
	return 0;
out:
	free(v);
	free(tags);
	return e;
}

int rsrc_unreg_buffers(struct emu_ring *r)
{
	pthread_mutex_lock(&r->lock);
	if (!r->bufs) {
		pthread_mutex_unlock(&r->lock);
		return -ENXIO;
	}
	for (unsigned i = 0; i < r->nbufs; i++)
		post_tag_locked(r, r->buf_tags[i]);
	free(r->bufs);
	free(r->buf_tags);
	r->bufs = NULL;
	r->buf_tags = NULL;
	r->nbufs = 0;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int rsrc_update_buffers(struct emu_ring *r, unsigned off, const struct iovec *uiov, const uint64_t *utags,
			  unsigned nr)
{
	unsigned done = 0;
	for (; done < nr; done++) {
		struct iovec v;
		uint64_t tag = 0;
		if (ucopy(&v, uiov + done, sizeof(v)) < 0 || (utags && ucopy(&tag, utags + done, sizeof(tag)) < 0))
			return done ? (int)done : -EFAULT;
		int e = check_buf(&v);
		if (!e && tag && !v.iov_base)
			e = -EINVAL;
		if (e)
			return done ? (int)done : e;
		pthread_mutex_lock(&r->lock);
		if (!r->bufs) {
			pthread_mutex_unlock(&r->lock);
			return -ENXIO;
		}
		if (off + done >= r->nbufs || off + done < off) {
			pthread_mutex_unlock(&r->lock);
			return done ? (int)done : -EINVAL;
		}
		post_tag_locked(r, r->buf_tags[off + done]);
		r->bufs[off + done] = v;
		r->buf_tags[off + done] = tag;
		pthread_mutex_unlock(&r->lock);
	}
	return (int)done;
}

/* Make fent for a registered file: our own dup, so closing the original keeps it. */
static int file_slot(struct emu_ring *r, int fd, struct fent *out)
{
	if (fd == -1) {
		out->fd = -1;
		out->valid = 0;
		return 0;
	}
	if (emu_find_checked(fd))
		return -EBADF;                        /* the kernel refuses ring fds too */
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -errno;
	d = emu_fd_high(d);
	int e = exec_file(r, d, -1, out);
	if (e < 0) {
		close(d);
		return e;
	}
	return 0;
}

int rsrc_reg_files(struct emu_ring *r, const int *ufds, const uint64_t *utags, unsigned nr, int sparse)
{
	if (!nr)
		return -EINVAL;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && nr > rl.rlim_cur)
		return -EMFILE;
	if (nr > (1u << 20))
		return -EMFILE;
	struct fent *f = calloc(nr, sizeof(*f));
	uint64_t *tags = calloc(nr, sizeof(*tags));
	unsigned i = 0;
	int e = 0;
	if (!f || !tags) {
		e = -ENOMEM;
		goto out;
	}
	if (utags && (e = ucopy(tags, utags, nr * sizeof(*tags))) < 0)
		goto out;
	for (; i < nr; i++) {
		int fd = -1;
		if (!sparse && (e = ucopy(&fd, ufds + i, sizeof(fd))) < 0)
			goto out;
		if (fd < -1 || (fd == -1 && tags[i])) {
			e = fd == -1 ? -EINVAL : -EBADF;
			goto out;
		}
		if ((e = file_slot(r, fd, &f[i])) < 0)
			goto out;
	}
	pthread_mutex_lock(&r->lock);
	if (r->files) {
		pthread_mutex_unlock(&r->lock);
		e = -EBUSY;
		goto out;
	}
	r->files = f;
	r->file_tags = tags;
	r->nfiles = nr;
	r->alloc_lo = 0;
	r->alloc_hi = nr;
	r->alloc_next = 0;
	pthread_mutex_unlock(&r->lock);
	return 0;
out:
	while (i-- > 0)
		if (f[i].fd >= 0)
			close(f[i].fd);
	free(f);
	free(tags);
	return e;
}

int rsrc_unreg_files(struct emu_ring *r)
{
	pthread_mutex_lock(&r->lock);
	if (!r->files) {
		pthread_mutex_unlock(&r->lock);
		return -ENXIO;
	}
	for (unsigned i = 0; i < r->nfiles; i++) {
		if (r->files[i].fd >= 0) {
			close(r->files[i].fd);
			post_tag_locked(r, r->file_tags[i]);
		}
	}
	free(r->files);
	free(r->file_tags);
	r->files = NULL;
	r->file_tags = NULL;
	r->nfiles = 0;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* Shared by io_uring_register(FILES_UPDATE*) and IORING_OP_FILES_UPDATE. */
int emu_update_files(struct emu_ring *r, unsigned off, int *ufds, const uint64_t *utags, unsigned nr)
{
	unsigned done = 0;
	int alloc = off == IORING_FILE_INDEX_ALLOC;
	if (!alloc) {
		/* the kernel's order: no table, then a range past its end, before any entry */
		pthread_mutex_lock(&r->lock);
		int e = !r->files ? -ENXIO : (uint64_t)off + nr > r->nfiles ? -EINVAL : 0;
		pthread_mutex_unlock(&r->lock);
		if (e)
			return e;
	}
	for (; done < nr; done++) {
		int fd;
		uint64_t tag = 0;
		if (ucopy(&fd, ufds + done, sizeof(fd)) < 0 || (utags && ucopy(&tag, utags + done, sizeof(tag)) < 0))
			return done ? (int)done : -EFAULT;
		if (!alloc) {
			if ((fd == IORING_REGISTER_FILES_SKIP || fd == -1) && tag)
				return done ? (int)done : -EINVAL;
			if (fd == IORING_REGISTER_FILES_SKIP)
				continue;
			/* the slot's file goes first, as the kernel's: one whose new fd then
			 * cannot be installed (not open, a ring) is left empty */
			pthread_mutex_lock(&r->lock);
			unsigned slot = off + done;
			if (r->files && slot < r->nfiles && r->files[slot].fd >= 0) {
				close(r->files[slot].fd);
				post_tag_locked(r, r->file_tags[slot]);
				r->files[slot] = (struct fent){ .fd = -1 };
				r->file_tags[slot] = 0;
			}
			pthread_mutex_unlock(&r->lock);
			if (fd < -1)
				return done ? (int)done : -EBADF;
		} else if (fd < -1 || (fd == -1 && tag)) {
			return done ? (int)done : (fd == -1 ? -EINVAL : -EBADF);
		}
		struct fent fe;
		int e = file_slot(r, fd, &fe);
		if (e < 0)
			return done ? (int)done : e;
		pthread_mutex_lock(&r->lock);
		unsigned slot = off + done;
		if (!r->files) {
			e = -ENXIO;
		} else if (alloc) {
			e = -ENFILE;
			for (unsigned k = r->alloc_lo; k < r->alloc_hi && k < r->nfiles; k++) {
				if (r->files[k].fd < 0) {
					slot = k;
					e = 0;
					break;
				}
			}
		} else if (slot >= r->nfiles || slot < off) {
			e = -EINVAL;
		}
		if (!e) {
			if (r->files[slot].fd >= 0) {
				close(r->files[slot].fd);
				post_tag_locked(r, r->file_tags[slot]);
			}
			r->files[slot] = fe;
			r->file_tags[slot] = tag;
		}
		pthread_mutex_unlock(&r->lock);
		if (e) {
			if (fe.fd >= 0)
				close(fe.fd);
			return done ? (int)done : e;
		}
		if (alloc) {
			int idx = (int)slot;
			if (uwrite(ufds + done, &idx, sizeof(idx)) < 0)
				return done ? (int)done : -EFAULT;
		}
	}
	return (int)done;
}
