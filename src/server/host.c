/* SPDX-License-Identifier: MIT */
/*
 * host.c - one simplefs_server, many clients: rings join (the first one on
 * fds 3..6 from the process that started the server, later ones through the
 * image's Unix socket with SCM_RIGHTS) and leave (their client closed its
 * liveness socket, or, for the first ring, the process that started the
 * server died); the backend and
 * the mounted image are shared, everything else is per ring.
 *
 * Must never: accept a client of another user (SO_PEERCRED) or descriptors
 * that fail the checks the first client's pass (counter-mode eventfds, a
 * region sealed against shrinking, seals read before the size, a header
 * ur_region_check accepts); block on a client (every socket call here is
 * non-blocking, a silent connection is dropped after UR_PEND_NS); unmap a
 * ring while its AIO is in flight; or take an attach name another user holds
 * for its own (attach.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "../common/attach.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ur_host_init(struct ur_host *h, const struct ur_backend_ops *be)
{
	memset(h, 0, sizeof(*h));
	h->be = be;
	h->listen_fd = -1;
	h->last_live = -1;
	for (int i = 0; i < UR_PEND_MAX; i++)
		h->pend_fd[i] = -1;
}

int ur_check_live(int fd)
{
	int v;
	socklen_t l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0)
		return -errno;
	if (v != AF_UNIX)
		return -EPROTOTYPE;
	l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0)
		return -errno;
	return v == SOCK_SEQPACKET ? 0 : -EPROTOTYPE;
}

int ur_hello_send(int live, int err, const char *msg)
{
	struct ur_hello hl;
	memset(&hl, 0, sizeof(hl));
	hl.err = err;
	hl.pid = (int32_t)getpid();
	snprintf(hl.msg, sizeof(hl.msg), "%s", msg ? msg : "");
	return send(live, &hl, sizeof(hl), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(hl) ? 0 : -1;
}

void ur_host_bye(int live, int err, const char *msg)
{
	if (live < 0)
		return;
	(void)ur_hello_send(live, err, msg);
	close(live);
}

int ur_host_add(struct ur_host *h, int memfd, int efd_sq, int efd_cq, int live,
		char *err, size_t errlen)
{
	struct ur_server *s = NULL;
	uint8_t *base = MAP_FAILED;
	uint64_t size = 0;
	int r;
	if (h->nrings >= UR_MAX_CLIENTS) {
		snprintf(err, errlen, "too many clients (%u)", UR_MAX_CLIENTS);
		r = -EUSERS;
		goto fail;
	}
	if ((r = ur_check_live(live)) < 0) {
		snprintf(err, errlen, "the liveness socket is not an AF_UNIX SOCK_SEQPACKET socket");
		goto fail;
	}
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(live, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0)
		cr.pid = 0;                     /* unknown: the ring's lock bounds alone */
	if ((r = ur_doorbell_check(efd_sq, err, errlen)) < 0 ||
	    (r = ur_doorbell_check(efd_cq, err, errlen)) < 0)
		goto fail;
	/* Seals first, then the size: once it is sealed against shrinking,
	 * the size fstat reports is one the client can no longer take away. */
	int seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		snprintf(err, errlen, "region is not sealed against shrinking");
		r = -EINVAL;
		goto fail;
	}
	struct stat st;
	if (fstat(memfd, &st) < 0 || st.st_size <= 0) {
		snprintf(err, errlen, "cannot size the region");
		r = -EINVAL;
		goto fail;
	}
	size = (uint64_t)st.st_size;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (base == MAP_FAILED) {
		r = -errno;
		snprintf(err, errlen, "cannot map the region");
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if ((r = ur_server_attach(s, base, size, err, errlen)) < 0)
		goto fail;
	close(memfd);
	s->efd_sq = efd_sq;
	s->efd_cq = efd_cq;
	s->live = live;
	s->be = h->be;
	s->bst = h->bst;
	s->host = h;
	s->pid = cr.pid;
	s->hdr->server_pid = (int32_t)getpid();
	if (h->bst && h->aio)
		(void)ur_aio_init(s);           /* failing: this ring's reads stay synchronous */
	s->cold_skip = h->nrings % UR_COLD_EVERY;   /* idle rings' looks spread over the turns */
	struct ur_server **tail = &h->rings;
	while (*tail)
		tail = &(*tail)->next;
	*tail = s;
	h->nrings++;
	ur_server_set_state(s, UR_STATE_READY);
	return 0;
fail:
	free(s);
	if (base != MAP_FAILED)
		munmap(base, size);
	close(memfd);
	close(efd_sq);
	close(efd_cq);
	return r;
}

void ur_host_drop(struct ur_host *h, struct ur_server *s)
{
	struct ur_server **pp = &h->rings;
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = s->next;
	h->nrings--;
	ur_aio_fini(s);                     /* its image I/O done before the unmap */
	ur_server_close_files(s);
	ur_server_set_state(s, UR_STATE_EXITED);
	h->n_sqe += s->n_sqe;
	h->n_sleep += s->n_sleep;
	h->n_wake_client += s->n_wake_client;
	h->n_handover += s->n_handover;
	h->n_aio += s->n_aio;
	h->n_aio_w += s->n_aio_w;
	h->n_busy += s->n_busy;
	munmap(s->base, s->size);
	close(s->efd_sq);
	close(s->efd_cq);
	if (!h->rings && h->last_live < 0)
		h->last_live = s->live;     /* its word comes after the unmount */
	else
		ur_host_bye(s->live, 0, UR_BYE_MORE);
	free(s);
}

/* Does anyone listen at the attach name n? 1 with its credentials in *cr
 * and *ours set when it is of this user (ur_attach_peer), else 0 (nobody
 * bound it, or it is bound but not listening). */
static int listener(const struct ur_attach_name *n, struct ucred *cr, int *ours)
{
	memset(cr, 0, sizeof(*cr));
	*ours = 0;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int r = connect(fd, (const struct sockaddr *)&n->a, n->len) == 0;
	if (r)
		*ours = ur_attach_peer(fd, cr) == 0;
	close(fd);
	return r;
}

int ur_host_listen(struct ur_host *h, const char *image, pid_t *other, char *err, size_t errlen)
{
	struct ur_attach_name n;
	*other = 0;
	int r = ur_attach_name(image, &n);
	if (r < 0) {
		snprintf(err, errlen, "cannot name the attach socket of %.120s: %s", image, strerror(-r));
		return r;
	}
	/* Binding an abstract name is atomic: EADDRINUSE while any socket
	 * holds it. A holder that is bound but not yet listening (a read-only
	 * server of this image starting at this moment) is given a little
	 * time. */
	for (int tries = 0;; tries++) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot make the attach socket: %s", strerror(-r));
			return r;
		}
		if (bind(fd, (struct sockaddr *)&n.a, n.len) == 0 && listen(fd, 16) == 0) {
			h->listen_fd = fd;
			return 0;
		}
		r = -errno;
		close(fd);
		if (r != -EADDRINUSE) {
			snprintf(err, errlen, "cannot listen on the attach socket %s: %s", n.shown, strerror(-r));
			return r;
		}
		struct ucred cr;
		int ours = 0;
		if (listener(&n, &cr, &ours)) {
			if (ours) {
				/* Another server of this image (read-only, like
				 * us: the image's lock is shared) serves it. */
				*other = cr.pid;
				return -EADDRINUSE;
			}
			snprintf(err, errlen, "the attach socket %s of this image is held by pid %d of uid %u, "
				 "another user: refused (docs/ABI.md, many clients)", n.shown, (int)cr.pid,
				 (unsigned)cr.uid);
			return -EACCES;
		}
		if (tries >= 100) {
			snprintf(err, errlen, "the attach socket %s of this image is taken by a process that "
				 "does not listen on it", n.shown);
			return -EADDRINUSE;
		}
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

void ur_host_unlisten(struct ur_host *h)
{
	if (h->listen_fd < 0)
		return;
	close(h->listen_fd);
	h->listen_fd = -1;
	for (int i = 0; i < UR_PEND_MAX; i++)
		if (h->pend_fd[i] >= 0) {
			close(h->pend_fd[i]);
			h->pend_fd[i] = -1;
		}
	h->npend_fd = 0;
}

/* Does a ring that wants to be the only client live? */
static int host_excl(const struct ur_host *h)
{
	for (const struct ur_server *s = h->rings; s; s = s->next)
		if (s->excl)
			return 1;
	return 0;
}

static void refuse(struct ur_host *h, int c, int err, const char *msg)
{
	h->n_refused++;
	ur_host_bye(c, err, msg);
}

/* Read the attach message of connection c: 1 if it is not there yet, else 0
 * (c is then a ring's liveness socket, or refused and closed). */
static int attach_one(struct ur_host *h, int c)
{
	struct ur_attach m;
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} cb;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cb.buf;
	msg.msg_controllen = sizeof(cb.buf);
	ssize_t n = recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	int fds[8], nfd = 0;
	for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof(int));
			if (nfd < 8)
				fds[nfd++] = fd;
			else
				close(fd);
		}
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	const char *why = NULL;
	int err = -EINVAL;
	char text[200];
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()) {
		why = "the server belongs to another user";
		err = -EACCES;
	} else if (n != (ssize_t)sizeof(m) || m.magic != UR_ABI_MAGIC || m.version != UR_ABI_VERSION ||
		   (m.flags & ~UR_ATTACH_VALID) || m.reserved) {
		why = "bad attach message";
	} else if ((msg.msg_flags & MSG_CTRUNC) || nfd != 3) {
		why = "an attach passes exactly 3 descriptors";
	} else if (host_excl(h) || ((m.flags & UR_ATTACH_EXCL) && h->nrings)) {
		snprintf(text, sizeof(text), "in use by pid %d, %s", (int)getpid(),
			 host_excl(h) ? "for one client only" : "with other clients");
		why = text;
		err = -EBUSY;
	} else if ((h->attach_flags & UR_ATTACH_RDONLY) && !(m.flags & UR_ATTACH_RDONLY)) {
		/* (O_DIRECT or not is the server's business: it serves the
		 * image as it mounted it.) */
		snprintf(text, sizeof(text), "in use by pid %d, mounted read-only", (int)getpid());
		why = text;
		err = -EBUSY;
	}
	if (why) {
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
		refuse(h, c, err, why);
		return 0;
	}
	int r = ur_host_add(h, fds[0], fds[1], fds[2], c, text, sizeof(text));
	if (r < 0) {
		refuse(h, c, r, text);
		return 0;
	}
	h->n_attach++;
	struct ur_server *s = h->rings;
	while (s->next)
		s = s->next;
	s->rdonly = !(h->attach_flags & UR_ATTACH_RDONLY) && (m.flags & UR_ATTACH_RDONLY);
	s->excl = !!(m.flags & UR_ATTACH_EXCL);
	if (ur_hello_send(c, 0, "ready") < 0)
		s->gone = 1;                    /* nobody listening: the poll drops it */
	return 0;
}

static void pend_remove(struct ur_host *h, int i)
{
	h->pend_fd[i] = -1;
	h->npend_fd--;
}

void ur_host_accept(struct ur_host *h)
{
	for (int k = 0; k < 16 && h->listen_fd >= 0; k++) {
		int c = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0)
			return;                 /* EAGAIN: no more */
		if (!attach_one(h, c))
			continue;
		/* Its message is not there yet: wait for it a little, in the poll. */
		int slot = -1;
		for (int i = 0; i < UR_PEND_MAX && slot < 0; i++)
			if (h->pend_fd[i] < 0)
				slot = i;
		if (slot < 0) {
			refuse(h, c, -EAGAIN, "the server is busy attaching others");
			continue;
		}
		h->pend_fd[slot] = c;
		h->pend_t[slot] = now_ns();
		h->npend_fd++;
	}
}

void ur_host_pending(struct ur_host *h, int fd)
{
	for (int i = 0; i < UR_PEND_MAX; i++)
		if (h->pend_fd[i] == fd) {
			if (!attach_one(h, fd))
				pend_remove(h, i);
			return;
		}
}

void ur_host_expire(struct ur_host *h, uint64_t now)
{
	for (int i = 0; i < UR_PEND_MAX && h->npend_fd; i++)
		if (h->pend_fd[i] >= 0 && now - h->pend_t[i] >= UR_PEND_NS) {
			refuse(h, h->pend_fd[i], -ETIMEDOUT, "no attach message");
			pend_remove(h, i);
		}
}
