/* SPDX-License-Identifier: MIT */
/*
 * cat_ur - cat for files inside a SimpleFS image, through the user-space
 * io_uring (libur_fs): 4 KiB reads, several in flight into registered
 * buffers, written to stdout in file order.
 *
 *   cat_ur [-i IMAGE] FILE...      (IMAGE: -i, else $SFS_IMAGE, else disk.sfs)
 *
 * Must never: write a chunk out of order, stop at the first missing file (it
 * reports it and goes on, exit 1 at the end, as cat does), or create an image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ur_fs.h"

#define CHUNK 4096u
#define QD 16u

static const char *prog = "cat_ur";
static struct urfs_ring ring;
static struct iovec bufs[QD];

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-i IMAGE] FILE...\n"
		"Print files stored in a SimpleFS image, like cat.\n"
		"  -i IMAGE   the image (default: $SFS_IMAGE, else disk.sfs)\n"
		"  --help     this text\n", prog);
}

static int write_all(const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(STDOUT_FILENO, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One request at a time (nothing else in flight): its result. */
static int sync_req(struct urfs_sqe *sqe)
{
	urfs_sqe_set_data64(sqe, ~0ull);
	int r = urfs_submit(&ring);
	if (r < 0)
		return r;
	struct urfs_cqe *cqe;
	if ((r = urfs_wait_cqe(&ring, &cqe)) < 0)
		return r;
	r = cqe->res;
	urfs_cqe_seen(&ring, cqe);
	return r;
}

/* Print one file. Returns 0, or -errno (reported by the caller) ; a failed
 * stdout is fatal and reported here. */
static int cat_one(const char *name, int *fatal)
{
	struct urfs_sqe *sqe = urfs_get_sqe(&ring);
	urfs_prep_openat(sqe, name, URFS_O_RDONLY);
	int fd = sync_req(sqe);
	if (fd < 0)
		return fd;
	struct urfs_statx st;
	sqe = urfs_get_sqe(&ring);
	urfs_prep_statx(sqe, fd, NULL, &st);
	int r = sync_req(sqe);
	if (r < 0)
		goto out;

	uint64_t nchunks = (st.size + CHUNK - 1) / CHUNK;
	uint64_t next_issue = 0, next_out = 0, stop_at = nchunks;
	int32_t res[QD];
	uint8_t done[QD] = { 0 };
	unsigned inflight = 0;
	while (next_out < stop_at) {
		while (next_issue < stop_at && inflight < QD) {
			unsigned slot = (unsigned)(next_issue % QD);
			sqe = urfs_get_sqe(&ring);
			if (!sqe)
				break;
			urfs_prep_read_fixed(sqe, fd, bufs[slot].iov_base, CHUNK, next_issue * CHUNK, (int)slot);
			urfs_sqe_set_data64(sqe, next_issue);
			done[slot] = 0;
			next_issue++;
			inflight++;
		}
		struct urfs_cqe *cqe;
		if ((r = urfs_submit_and_wait(&ring, 1)) < 0)
			break;
		uint32_t head;
		unsigned n = 0;
		urfs_for_each_cqe(&ring, head, cqe) {
			uint64_t k = cqe->user_data;
			res[k % QD] = cqe->res;
			done[k % QD] = 1;
			n++;
		}
		urfs_cq_advance(&ring, n);
		inflight -= n;
		while (next_out < stop_at && done[next_out % QD]) {
			unsigned slot = (unsigned)(next_out % QD);
			int32_t got = res[slot];
			done[slot] = 0;
			if (got < 0) {
				r = got;
				stop_at = next_out;
				break;
			}
			if (got > 0 && (r = write_all(bufs[slot].iov_base, (size_t)got)) < 0) {
				fprintf(stderr, "%s: write error: %s\n", prog, strerror(-r));
				*fatal = 1;
				stop_at = next_out;
				break;
			}
			next_out++;
			if ((uint32_t)got < CHUNK)       /* the file ended early (it shrank) */
				stop_at = next_out;
		}
		r = 0;
	}
	/* Let what is still in flight land before the buffers are reused. */
	while (inflight) {
		struct urfs_cqe *cqe;
		int w = urfs_wait_cqe(&ring, &cqe);
		if (w < 0) {
			r = r ? r : w;
			break;
		}
		urfs_cqe_seen(&ring, cqe);
		inflight--;
	}
out:
	sqe = urfs_get_sqe(&ring);
	if (sqe) {
		urfs_prep_close(sqe, fd);
		int c = sync_req(sqe);
		if (!r && c < 0)
			r = c;
	}
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, 0, 'i' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	const char *image = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': image = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!image) {
		const char *e = getenv("SFS_IMAGE");
		image = e && *e ? e : "disk.sfs";
	}
	if (access(image, F_OK) < 0) {
		fprintf(stderr, "%s: %s: %s (no SimpleFS image; make one with 'sfs mkfs %s')\n",
			prog, image, strerror(errno), image);
		return 1;
	}
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = image;
	p.flags = URFS_SETUP_RDONLY;
	p.buf_area_size = QD * CHUNK;
	int r = urfs_queue_init_params(QD, &ring, &p);
	if (r < 0) {
		if (!strncmp(p.errmsg, image, strlen(image)))   /* the library named the image */
			fprintf(stderr, "%s: %s\n", prog, p.errmsg);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, image, p.errmsg[0] ? p.errmsg : strerror(-r));
		return 1;
	}
	for (unsigned i = 0; i < QD; i++)
		bufs[i].iov_len = CHUNK;
	if ((r = urfs_register_buffers(&ring, bufs, QD)) < 0) {
		fprintf(stderr, "%s: register buffers: %s\n", prog, strerror(-r));
		urfs_queue_exit(&ring);
		return 1;
	}
	int rc = 0, fatal = 0;
	for (int i = optind; i < argc && !fatal; i++) {
		r = cat_one(argv[i], &fatal);
		if (r < 0) {
			if (!fatal)
				fprintf(stderr, "%s: %s: %s\n", prog, argv[i], strerror(-r));
			rc = 1;
			if (r == -EPIPE) {
				fprintf(stderr, "%s: the server is gone\n", prog);
				break;
			}
		}
		if (fatal)
			rc = 1;
	}
	urfs_queue_exit(&ring);
	return rc;
}
