/*
 * gic-emu-xproc: a payload-checking verbs client for two processes, built
 * against the installed rdma-core headers and libibverbs, run on the
 * emulated device (LD_LIBRARY_PATH=<build>/emu). perftest does not check
 * bytes; this does.
 *
 *   gic-emu-xproc --server PORT            one side, listening on 127.0.0.1
 *   gic-emu-xproc --client HOST PORT       the other side
 *   gic-emu-xproc --fork                   both: the server starts the client
 *                                          as a second process (ctest)
 *   gic-emu-xproc --threads                both sides as threads of one process
 *                                          (checks the test, and in-process QPs)
 * Options: --peer-death (the client is killed with SIGKILL while the server
 * has WQEs posted; the server must see an error, then flushes), --iters N,
 * --limit SECONDS (each wait), --dev NAME.
 *
 * The sides exchange LID, GID, QPNs, PSN, rkey and address over TCP, take
 * their RC QPs RESET -> INIT -> RTR -> RTS and run the rounds of
 * xproc_cases.c at once in both directions. Exit status 0 only when every
 * check ran and passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xproc.h"

enum mode { M_NONE, M_SERVER, M_CLIENT, M_FORK, M_THREADS };

typedef struct opts {
	enum mode mode;
	const char *host, *dev;
	int port, iters, peer_death;
	double limit_s;
} opts;

/* ------------------------------------------------------------------ */
/* Messages and checks. */

double xp_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The "gic-emu-xproc[side] iter N phase:" prefix of every message. */
static void where(xside *s)
{
	fprintf(stderr, "gic-emu-xproc[%s]", s->name);
	if (s->phase && s->iter)
		fprintf(stderr, " iter %d %s", s->iter, s->phase);
	else if (s->phase)
		fprintf(stderr, " %s", s->phase);
	fputs(": ", stderr);
}

int xp_check(xside *s, int ok, const char *fmt, ...)
{
	va_list ap;

	s->checks++;
	if (ok)
		return 1;
	s->failed++;
	where(s);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 0;
}

void xp_fail(xside *s, const char *fmt, ...)
{
	va_list ap;

	s->failed++;
	where(s);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* TCP: exchange and stepping. */

/* All n bytes of p in or out of fd within limit_s. 0, or -1 with errno
 * (ETIMEDOUT, ECONNRESET for the peer closing). */
static int io_all(int fd, void *p, size_t n, int out, double limit_s)
{
	double end = xp_now() + limit_s;

	while (n) {
		struct pollfd pf = { fd, out ? POLLOUT : POLLIN, 0 };
		int left = (int)((end - xp_now()) * 1000);
		ssize_t k;

		if (left <= 0 || poll(&pf, 1, left) == 0)
			return errno = ETIMEDOUT, -1;
		k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k == 0)
			return errno = ECONNRESET, -1;
		if (k < 0 && errno != EINTR && errno != EAGAIN)
			return -1;
		if (k > 0) {
			p = (uint8_t *)p + k;
			n -= (size_t)k;
		}
	}
	return 0;
}

int xp_tag_out(xside *s, uint32_t tag)
{
	uint32_t out = htonl(tag);

	return io_all(s->fd, &out, 4, 1, s->limit_s);
}

int xp_tag_in(xside *s, uint32_t *tag, double limit_s)
{
	uint32_t in = 0;

	if (io_all(s->fd, &in, 4, 0, limit_s))
		return -1;
	*tag = ntohl(in);
	return 0;
}

int xp_sync(xside *s, uint32_t tag)
{
	uint32_t in = 0;

	if (xp_tag_out(s, tag) || xp_tag_in(s, &in, s->limit_s * 3)) {
		xp_fail(s, "step 0x%x with the peer: %s%s", tag, strerror(errno),
			errno == ECONNRESET ? " (the peer closed the connection; see its messages)"
					    : "");
		return -1;
	}
	if (in != tag) {
		xp_fail(s, "out of step with the peer: tag 0x%x, the peer sent 0x%x", tag, in);
		return -1;
	}
	return 0;
}

/* A socket listening on 127.0.0.1:port (0: any free port); its port in
 * *bound. The fd or -1 (printed). */
static int listen_on(int port, int *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		fprintf(stderr, "gic-emu-xproc: listening on 127.0.0.1:%d: %s\n", port,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*bound = ntohs(a.sin_port);
	return fd;
}

/* The peer's connection on lfd within limit_s; the fd or -1 (printed). */
static int accept_peer(int lfd, double limit_s)
{
	struct pollfd pf = { lfd, POLLIN, 0 };
	int fd, one = 1;

	if (poll(&pf, 1, (int)(limit_s * 1000)) != 1) {
		fprintf(stderr, "gic-emu-xproc[server]: no client connected within %.0f s\n",
			limit_s);
		return -1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		fprintf(stderr, "gic-emu-xproc[server]: accept: %s\n", strerror(errno));
	else
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* A connection to host:port, retried until the server listens or
 * limit_s passes; the fd or -1 (printed). */
static int connect_peer(const char *host, int port, double limit_s)
{
	struct addrinfo hint = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	double end = xp_now() + limit_s;
	char ps[16];
	int rc, one = 1;

	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hint, &ai);
	if (rc) {
		fprintf(stderr, "gic-emu-xproc[client]: %s: %s\n", host, gai_strerror(rc));
		return -1;
	}
	do {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			freeaddrinfo(ai);
			return fd;
		}
		if (fd >= 0)
			close(fd);
		usleep(20000);
	} while (xp_now() < end);
	freeaddrinfo(ai);
	fprintf(stderr, "gic-emu-xproc[client]: no server at %s:%d within %.0f s\n", host, port,
		limit_s);
	return -1;
}

/* Sends s->me and receives s->peer (fixed fields, network order). 0 or -1. */
static int exchange(xside *s)
{
	uint32_t w[8], r[8];

	w[0] = htonl(0x67696331); /* "gic1" */
	w[1] = htonl(s->me.lid);
	w[2] = htonl(s->me.qpn);
	w[3] = htonl(s->me.srq_qpn);
	w[4] = htonl(s->me.psn);
	w[5] = htonl(s->me.rkey);
	w[6] = htonl((uint32_t)(s->me.addr >> 32));
	w[7] = htonl((uint32_t)s->me.addr);
	if (io_all(s->fd, w, sizeof(w), 1, s->limit_s) ||
	    io_all(s->fd, s->me.gid, 16, 1, s->limit_s) ||
	    io_all(s->fd, r, sizeof(r), 0, s->limit_s * 3) ||
	    io_all(s->fd, s->peer.gid, 16, 0, s->limit_s)) {
		xp_fail(s, "exchanging QP information over TCP: %s", strerror(errno));
		return -1;
	}
	if (ntohl(r[0]) != 0x67696331) {
		xp_fail(s, "the peer is not gic-emu-xproc (magic 0x%x)", ntohl(r[0]));
		return -1;
	}
	s->peer.lid = ntohl(r[1]);
	s->peer.qpn = ntohl(r[2]);
	s->peer.srq_qpn = ntohl(r[3]);
	s->peer.psn = ntohl(r[4]);
	s->peer.rkey = ntohl(r[5]);
	s->peer.addr = (uint64_t)ntohl(r[6]) << 32 | ntohl(r[7]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Verbs objects. */

/* The device named s->dev, opened; its port's LID and GID. 0 or -1. */
static int open_dev(xside *s)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int n = 0;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !s->ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), s->dev))
			s->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!s->ctx) {
		xp_fail(s, "no device %s among %d (LD_LIBRARY_PATH=<build>/emu?)", s->dev, n);
		return -1;
	}
	if (ibv_query_port(s->ctx, 1, &pa)) {
		xp_fail(s, "ibv_query_port(%s, 1): %s", s->dev, strerror(errno));
		return -1;
	}
	s->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	s->gid_index = s->roce && pa.gid_tbl_len > 1 ? 1 : 0;
	if (ibv_query_gid(s->ctx, 1, s->gid_index, &gid)) {
		xp_fail(s, "ibv_query_gid(%s, 1, %d): %s", s->dev, s->gid_index, strerror(errno));
		return -1;
	}
	memcpy(s->me.gid, gid.raw, 16);
	s->me.lid = pa.lid;
	return 0;
}

/* An RC QP on s's CQs, receiving from srq when given. */
static struct ibv_qp *make_qp(xside *s, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = XP_SEND_WR;
	qa.cap.max_recv_wr = srq ? 0 : XP_RECV_WR;
	qa.cap.max_send_sge = XP_SGE;
	qa.cap.max_recv_sge = srq ? 0 : XP_SGE;
	qa.cap.max_inline_data = XP_INLINE;
	qp = ibv_create_qp(s->pd, &qa);
	if (!qp)
		xp_fail(s, "ibv_create_qp(RC%s): %s", srq ? ", SRQ" : "", strerror(errno));
	else if (!srq)
		s->max_inline = qa.cap.max_inline_data;
	return qp;
}

/* PD, buffer, MR, CQs, SRQ and both QPs; s->me filled. 0 or -1. */
static int open_objects(xside *s)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = XP_RECV_WR, .max_sge = 1 } };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;

	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, XP_LEN);
	if (!s->pd || !s->buf)
		return xp_fail(s, "ibv_alloc_pd or the buffer: %s", strerror(errno)), -1;
	memset(s->buf, 0, XP_LEN);
	s->mr = ibv_reg_mr(s->pd, s->buf, XP_LEN, acc);
	s->scq = ibv_create_cq(s->ctx, XP_CQE, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, XP_CQE, NULL, NULL, 0);
	s->srq = ibv_create_srq(s->pd, &sa);
	if (!s->mr || !s->scq || !s->rcq || !s->srq)
		return xp_fail(s, "MR, CQs or SRQ: %s", strerror(errno)), -1;
	s->qp = make_qp(s, NULL);
	s->sqp = s->qp ? make_qp(s, s->srq) : NULL;
	if (!s->sqp)
		return -1;
	s->me.qpn = s->qp->qp_num;
	s->me.srq_qpn = s->sqp->qp_num;
	s->me.psn = (uint32_t)((uint64_t)(xp_now() * 1e6) + (uint64_t)s->id * 77) & 0xffffff;
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
	return 0;
}

/* Everything open_objects made, destroyed; failures counted. */
static void close_objects(xside *s)
{
	if (s->sqp)
		xp_check(s, ibv_destroy_qp(s->sqp) == 0, "ibv_destroy_qp (SRQ QP)");
	if (s->qp)
		xp_check(s, ibv_destroy_qp(s->qp) == 0, "ibv_destroy_qp");
	if (s->srq)
		xp_check(s, ibv_destroy_srq(s->srq) == 0, "ibv_destroy_srq");
	if (s->mr)
		xp_check(s, ibv_dereg_mr(s->mr) == 0, "ibv_dereg_mr");
	if (s->scq)
		xp_check(s, ibv_destroy_cq(s->scq) == 0, "ibv_destroy_cq (send)");
	if (s->rcq)
		xp_check(s, ibv_destroy_cq(s->rcq) == 0, "ibv_destroy_cq (receive)");
	if (s->pd)
		xp_check(s, ibv_dealloc_pd(s->pd) == 0, "ibv_dealloc_pd");
	if (s->ctx)
		xp_check(s, ibv_close_device(s->ctx) == 0, "ibv_close_device");
	free(s->buf);
}

/* ------------------------------------------------------------------ */
/* RESET -> INIT -> RTR -> RTS. */

/* qp to INIT with every remote right. */
static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS);
}

/* qp to RTR toward the peer's QP dqpn (its LID, or its GID on RoCE). */
static int to_rtr(xside *s, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dqpn;
	a.rq_psn = s->peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1; /* 0.01 ms */
	a.ah_attr.dlid = (uint16_t)s->peer.lid;
	a.ah_attr.port_num = 1;
	if (s->roce) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, s->peer.gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

/* qp to RTS: 67 ms transport timeout, 7 retries, RNR retried forever. */
static int to_rts(xside *s, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = s->me.psn;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* qp through the three transitions toward dqpn; each failure says which. */
static int connect_qp(xside *s, struct ibv_qp *qp, uint32_t dqpn, const char *which)
{
	const char *step = "INIT";
	int rc = to_init(qp);

	if (!rc) {
		step = "RTR";
		rc = to_rtr(s, qp, dqpn);
	}
	if (!rc) {
		step = "RTS";
		rc = to_rts(s, qp);
	}
	if (rc)
		xp_fail(s, "ibv_modify_qp(%s QP 0x%x) to %s toward the peer's QP 0x%x (LID %u%s) "
			   "failed: %s (%d)",
			which, qp->qp_num, step, dqpn, s->peer.lid, s->roce ? ", RoCE GID" : "",
			strerror(rc), rc);
	return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* One side's run. */

/* Opens, exchanges, connects and runs s's part; closes. 0 when every check
 * passed. */
static int run_side(xside *s, int peer_death)
{
	int rc = open_dev(s) || open_objects(s) || exchange(s) ||
		 connect_qp(s, s->qp, s->peer.qpn, "the") ||
		 connect_qp(s, s->sqp, s->peer.srq_qpn, "the SRQ") || xp_sync(s, 0x100);

	if (!rc && !peer_death)
		rc = xp_run_cases(s);
	else if (!rc)
		rc = xp_sanity(s) || (s->id == 0 ? xp_survive(s) : xp_await_death(s));
	s->phase = NULL;
	if (!rc && !peer_death)
		rc = xp_sync(s, 0xe4d);
	close_objects(s);
	if (s->fd >= 0)
		close(s->fd);
	printf("gic-emu-xproc[%s]: %u checks, %u failed%s\n", s->name, s->checks, s->failed,
	       rc ? " (stopped early)" : "");
	fflush(stdout);
	return rc || s->failed || !s->checks ? 1 : 0;
}

/* A side of o's options. */
static void side_init(xside *s, const opts *o, int id)
{
	memset(s, 0, sizeof(*s));
	s->name = id ? "client" : "server";
	s->id = id;
	s->fd = -1;
	s->limit_s = o->limit_s;
	s->iters = o->iters;
	s->dev = o->dev;
}

/* ------------------------------------------------------------------ */
/* Modes. */

/* Starts this program again as the client of 127.0.0.1:port. The pid or -1. */
static pid_t spawn_client(const opts *o, int port)
{
	char ps[16], it[16], lim[32];
	pid_t pid;

	snprintf(ps, sizeof(ps), "%d", port);
	snprintf(it, sizeof(it), "%d", o->iters);
	snprintf(lim, sizeof(lim), "%g", o->limit_s);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "gic-emu-xproc", "--client", "127.0.0.1", ps, "--iters", it,
				 "--limit", lim, "--dev", (char *)o->dev,
				 o->peer_death ? "--peer-death" : NULL, NULL };

		execv("/proc/self/exe", argv);
		perror("gic-emu-xproc: execv /proc/self/exe");
		_exit(127);
	}
	if (pid < 0)
		perror("gic-emu-xproc: fork");
	return pid;
}

/* The child's exit within limit_s (killed after it). 0 when it exited 0,
 * or was killed by SIGKILL and killed is set. */
static int reap(pid_t pid, double limit_s, int killed)
{
	double end = xp_now() + limit_s;
	int st = 0;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (xp_now() > end) {
			fprintf(stderr, "gic-emu-xproc: the client did not exit within %.0f s; "
					"killing it\n", limit_s);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return 1;
		}
		usleep(10000);
	}
	if (killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		return 0;
	if (!killed && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	fprintf(stderr, "gic-emu-xproc: the client %s %d\n",
		WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st)
										   : WEXITSTATUS(st));
	return 1;
}

/* --server PORT, or --fork (a listening port of its own, the client
 * started as a second process). */
static int run_server(const opts *o)
{
	xside s;
	int port = 0, lfd = listen_on(o->mode == M_FORK ? 0 : o->port, &port), rc;

	side_init(&s, o, 0);
	if (lfd < 0)
		return 1;
	if (o->mode == M_FORK) {
		s.child = spawn_client(o, port);
		if (s.child < 0)
			return 1;
	} else {
		printf("gic-emu-xproc[server]: listening on 127.0.0.1:%d\n", port);
		fflush(stdout);
	}
	s.fd = accept_peer(lfd, o->limit_s * 3);
	close(lfd);
	rc = s.fd < 0 ? 1 : run_side(&s, o->peer_death);
	if (o->mode == M_FORK)
		rc |= reap(s.child, o->limit_s * 3, o->peer_death);
	return rc;
}

static void *client_thread(void *arg)
{
	xside *s = arg;

	return (void *)(intptr_t)run_side(s, 0);
}

/* --threads: both sides in this process, over TCP all the same. */
static int run_threads(const opts *o)
{
	xside srv, cli;
	pthread_t t;
	void *crc = NULL;
	int port = 0, lfd = listen_on(0, &port), rc;

	if (lfd < 0)
		return 1;
	side_init(&srv, o, 0);
	side_init(&cli, o, 1);
	cli.fd = connect_peer("127.0.0.1", port, o->limit_s);
	srv.fd = cli.fd < 0 ? -1 : accept_peer(lfd, o->limit_s);
	close(lfd);
	if (srv.fd < 0 || pthread_create(&t, NULL, client_thread, &cli))
		return 1;
	rc = run_side(&srv, 0);
	pthread_join(t, &crc);
	return rc || crc;
}

static int usage(void)
{
	fprintf(stderr, "usage: gic-emu-xproc --server PORT | --client HOST PORT | --fork | "
			"--threads\n"
			"       [--peer-death] [--iters N] [--limit SECONDS] [--dev NAME]\n");
	return 2;
}

/* o from argv; 0 or -1 on a bad argument. */
static int parse(int argc, char **argv, opts *o)
{
	*o = (opts){ .mode = M_NONE, .dev = "mlx5_0", .iters = 3, .limit_s = 10 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = argc - i - 1;

		if (!strcmp(a, "--server") && more >= 1 && o->mode == M_NONE) {
			o->mode = M_SERVER;
			o->port = atoi(argv[++i]);
		} else if (!strcmp(a, "--client") && more >= 2 && o->mode == M_NONE) {
			o->mode = M_CLIENT;
			o->host = argv[++i];
			o->port = atoi(argv[++i]);
		} else if ((!strcmp(a, "--fork") || !strcmp(a, "--threads")) && o->mode == M_NONE) {
			o->mode = a[2] == 'f' ? M_FORK : M_THREADS;
		} else if (!strcmp(a, "--peer-death")) {
			o->peer_death = 1;
		} else if (!strcmp(a, "--iters") && more >= 1) {
			o->iters = atoi(argv[++i]);
		} else if (!strcmp(a, "--limit") && more >= 1) {
			o->limit_s = atof(argv[++i]);
		} else if (!strcmp(a, "--dev") && more >= 1) {
			o->dev = argv[++i];
		} else {
			fprintf(stderr, "gic-emu-xproc: bad argument '%s'\n", a);
			return -1;
		}
	}
	if (o->mode == M_NONE || o->iters < 1 || o->limit_s <= 0 ||
	    ((o->mode == M_SERVER || o->mode == M_CLIENT) && (o->port < 1 || o->port > 65535)))
		return -1;
	if (o->peer_death && o->mode == M_THREADS) {
		fprintf(stderr, "gic-emu-xproc: --peer-death needs two processes "
				"(--fork, or --server and --client)\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	opts o;
	xside s;

	if (parse(argc, argv, &o))
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.mode == M_THREADS)
		return run_threads(&o);
	if (o.mode == M_SERVER || o.mode == M_FORK)
		return run_server(&o);
	side_init(&s, &o, 1);
	s.fd = connect_peer(o.host, o.port, o.limit_s * 3);
	return s.fd < 0 ? 1 : run_side(&s, o.peer_death);
}
