/* SPDX-License-Identifier: MIT */
/*
 * main.c - simplefs_server: the process the first libur_fs.so client of an
 * image starts. It takes that client's ring (region fd 3, doorbells fds 4 and
 * 5, liveness socket fd 6), mounts the image through a backend, listens for
 * later clients (host.c), says "ready" (or why not) on the liveness socket,
 * serves every ring (serve.c), and unmounts cleanly and exits when the last
 * client goes away.
 *
 * Must never: outlive its last client, leave the image mounted after it exits
 * normally, trust anything in the region, or print to stdout (it belongs to
 * the client's terminal); diagnostics go to stderr only for --check/--help.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "server.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: simplefs_server --client [options]   (started by libur_fs.so)\n"
		"       simplefs_server --check --image PATH    (mount the image, report, exit)\n"
		"\n"
		"Serves the shared-memory rings (io_uring in user space) of every client\n"
		"of a SimpleFS image. The first client hands over fd 3 (region memfd,\n"
		"sealed against shrinking), fd 4 (SQ doorbell eventfd), fd 5 (CQ doorbell\n"
		"eventfd), fd 6 (AF_UNIX SOCK_SEQPACKET liveness socket); later ones attach\n"
		"through the image's socket (docs/ABI.md); anything else is refused. A\n"
		"ring ends when its liveness socket hangs up or the process that made it\n"
		"dies; the server unmounts and exits after the last one.\n"
		"\n"
		"  --image PATH     the SimpleFS image (default $SFS_IMAGE or disk.sfs)\n"
		"  --idle-us N      spin N microseconds without work before sleeping\n"
		"                   (default: the value in the region header)\n"
		"  --direct         open the image O_DIRECT; aligned reads then go to the\n"
		"                   image through the kernel's AIO, many in flight\n"
		"  --no-aio         with --direct: no AIO, all image I/O synchronous (for comparison)\n"
		"  --exclusive      the first client is the only one while it lives\n"
		"  --create         format a default image if PATH does not exist\n"
		"  --rdonly         mount read-only (shared lock: several readers)\n"
		"  --backend NAME   one of: %s (default sfs if built in)\n"
		"  --stats          print counters to stderr at exit\n"
		"  --help           this text\n",
		ur_backend_names());
}

/* The hello on the first client's liveness socket (never blocks: a client
 * that filled the socket gets no word; -1 then). */
static int hello(int live, int err, const char *msg)
{
	return ur_hello_send(live, err, msg);
}

static void on_term(int sig)
{
	(void)sig;
	ur_server_stop = 1;
}

static pid_t ur_parent;

static void on_parent_death(int sig)
{
	(void)sig;
	if (getppid() != ur_parent)
		ur_server_parent_gone = 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, 0, 'i' },
		{ "idle-us", required_argument, 0, 'u' },
		{ "direct", no_argument, 0, 'd' },
		{ "create", no_argument, 0, 'c' },
		{ "rdonly", no_argument, 0, 'r' },
		{ "backend", required_argument, 0, 'b' },
		{ "client", no_argument, 0, 'C' },
		{ "check", no_argument, 0, 'k' },
		{ "stats", no_argument, 0, 's' },
		{ "no-aio", no_argument, 0, 'A' },
		{ "exclusive", no_argument, 0, 'X' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	struct ur_backend_conf conf = { 0 };
	const char *bname = NULL;
	long idle_us = -1;
	int client = 0, check = 0, stats = 0, aio = 1, excl = 0, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': conf.image = optarg; break;
		case 'u': {
			char *end;
			idle_us = strtol(optarg, &end, 10);
			if (*end || idle_us < 0 || idle_us > (long)UR_MAX_IDLE_US) {
				fprintf(stderr, "simplefs_server: --idle-us: bad value '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'd': conf.direct = 1; break;
		case 'c': conf.create = 1; break;
		case 'r': conf.rdonly = 1; break;
		case 'b': bname = optarg; break;
		case 'C': client = 1; break;
		case 'k': check = 1; break;
		case 's': stats = 1; break;
		case 'A': aio = 0; break;
		case 'X': excl = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || (!client && !check)) {
		usage(stderr);
		return 2;
	}
	if (!conf.image) {
		const char *e = getenv("SFS_IMAGE");
		conf.image = e && *e ? e : "disk.sfs";
	}
	const struct ur_backend_ops *be = ur_backend_find(bname ? bname : "sfs");
	if (!be && !bname)
		be = ur_backend_find("none");
	if (!be) {
		fprintf(stderr, "simplefs_server: --backend %s: no such backend (have: %s)\n",
			bname, ur_backend_names());
		return 2;
	}

	char err[200] = "";
	void *bst = NULL;
	int r;
	if (check) {
		r = be->init(&conf, &bst, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "simplefs_server: %s: %s\n", conf.image, err[0] ? err : strerror(-r));
			return 1;
		}
		if (err[0])
			fprintf(stderr, "simplefs_server: %s: warning: %s\n", conf.image, err);
		r = be->fini(bst);
		if (r < 0) {
			fprintf(stderr, "simplefs_server: %s: unmount: %s\n", conf.image, strerror(-r));
			return 1;
		}
		printf("simplefs_server: %s: mounted and unmounted cleanly (backend %s)\n", conf.image, be->name);
		return 0;
	}

	/* Client mode. Keep nothing the client did not mean to hand us: no
	 * blocked signals either (the doorbell timer's signal must land). */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, SIG_IGN);     /* ^C reaches the client; we follow it out */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	/* The first ring follows the process that started us out: its death
	 * (not the exit of the thread that did, which also sends the signal)
	 * ends that ring even when something keeps its liveness socket open. */
	sa.sa_handler = on_parent_death;
	sigaction(SIGHUP, &sa, NULL);
	ur_parent = getppid();
	(void)prctl(PR_SET_PDEATHSIG, SIGHUP);   /* gone already: the socket says so */
	close_range(UR_FD_LIVE + 1, ~0u, 0);
	int live = UR_FD_LIVE;
	if ((r = ur_check_live(live)) < 0) {
		fprintf(stderr, "simplefs_server: fd %d is not the liveness socket: %s\n", live, strerror(-r));
		return 2;
	}
	/* Our 0..2 must not hold the client's end of the liveness socket: its
	 * hang-up is how we see the client go. */
	for (int fd = 0; fd <= 2; fd++)
		if (ur_check_live(fd) == 0) {
			int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (nul < 0 || dup2(nul, fd) < 0) {
				hello(live, -EBADF, "cannot replace a socket on fd 0..2");
				return 1;
			}
			close(nul);
		}
	if ((r = ur_doorbell_init()) < 0) {
		hello(live, r, "cannot create the doorbell timer");
		return 1;
	}

	static struct ur_host h;
	ur_host_init(&h, be);
	h.aio = conf.direct && aio;
	h.attach_flags = (conf.rdonly ? UR_ATTACH_RDONLY : 0) | (conf.direct ? UR_ATTACH_DIRECT : 0);
	r = ur_host_add(&h, UR_FD_REGION, UR_FD_SQ_DOORBELL, UR_FD_CQ_DOORBELL, live, err, sizeof(err));
	if (r < 0) {
		hello(live, r, err);
		return 1;
	}
	struct ur_server *s = h.rings;
	s->excl = excl;
	s->first = 1;
	if (idle_us >= 0)
		s->idle_ns = (uint64_t)(idle_us < UR_MAX_IDLE_US ? idle_us : UR_MAX_IDLE_US) * 1000u;

	r = be->init(&conf, &bst, err, sizeof(err));
	if (r < 0) {
		ur_server_set_state(s, UR_STATE_FAILED);
		hello(live, r, err[0] ? err : strerror(-r));
		return 1;
	}
	if (err[0])
		fprintf(stderr, "simplefs_server: %s: warning: %s\n", conf.image, err);
	h.bst = bst;
	s->bst = bst;
	if (h.aio) {
		r = ur_aio_init(s);
		if (r < 0 && stats)
			fprintf(stderr, "simplefs_server: O_DIRECT reads stay synchronous: %s\n", strerror(-r));
	}
	/* Later clients of this image attach through its socket (ABI.md). */
	pid_t other = 0;
	if (strcmp(be->name, "none") && (r = ur_host_listen(&h, conf.image, &other, err, sizeof(err))) < 0) {
		/* A read-only server of this image started first: our client
		 * attaches to it (it tries again on this answer). Any other
		 * failure: no server runs without its socket (a later client
		 * would find the image locked and nobody to attach to), the
		 * client gets the reason. */
		if (other > 0)
			snprintf(err, sizeof(err), "in use by pid %d, a read-only server of this image",
				 (int)other);
		while (h.rings)
			ur_host_drop(&h, h.rings);
		be->fini(bst);
		hello(live, other > 0 ? -EBUSY : r, err);
		return other > 0 ? 0 : 1;
	}
	if (hello(live, 0, "ready") < 0)
		s->gone = 1;                 /* nobody listening: drop it, unmount and go */

	ur_host_run(&h);

	ur_host_unlisten(&h);
	while (h.rings)
		ur_host_drop(&h, h.rings);
	r = be->fini(bst);
	ur_host_bye(h.last_live, r < 0 ? r : 0, UR_BYE_LAST);
	if (stats)
		fprintf(stderr, "simplefs_server: %llu SQEs (%llu reads, %llu writes by AIO; "
			"%llu waits for an AIO slot), %llu sleeps, %llu client wakeups, "
			"%llu hand-overs; %llu clients attached, %llu refused; "
			"%llu lock waits looked at by grants; %llu loop turns, %llu rings looked at\n",
			(unsigned long long)h.n_sqe, (unsigned long long)h.n_aio,
			(unsigned long long)h.n_aio_w, (unsigned long long)h.n_busy,
			(unsigned long long)h.n_sleep, (unsigned long long)h.n_wake_client,
			(unsigned long long)h.n_handover, (unsigned long long)h.n_attach, (unsigned long long)h.n_refused,
			(unsigned long long)h.locks.n_grant_looked,
			(unsigned long long)h.n_turn, (unsigned long long)h.n_look);
	if (r < 0) {
		fprintf(stderr, "simplefs_server: %s: unmount: %s\n", conf.image, strerror(-r));
		return 1;
	}
	return 0;
}
