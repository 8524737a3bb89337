/*
 * softnic's wire (gic/softnic_wire.h) between two processes: this process
 * (the requester) and a forked child (the responder), each with its own
 * softnic, buffers in private memory, QP numbers and keys exchanged over
 * a socketpair. Checked:
 *   - RDMA writes of 1 B to 4 MiB (one and three SGEs, inline), every
 *     byte read back with RDMA READ into another buffer and compared, and
 *     a pipelined stream of unsignaled writes with every 32nd signaled;
 *   - 8-byte fetch-add and compare-swap (old values and the final value);
 *   - DUMP (checked locally, a NOP on the wire), then a write still lands;
 *   - SEND, SEND_IMM and WRITE_IMM into receives the child posted: the
 *     child checks payload, byte count, immediate and opcode and replies;
 *   - the responder QP's rights (no REMOTE_READ: a remote access error);
 *   - a bad rkey: a remote access error, then flushes;
 *   - a message larger than the wire's ring: a local length error;
 *   - a peer process killed (SIGKILL) with WQEs in flight: a transport
 *     retry error, then flushes, within the time limit; an idle QP of the
 *     same process goes to error and flushes its receives;
 *   - buffers in "GPU memory" (gic/softnic_devmem.h) on both sides: a fake
 *     CUDA part (host memcpy and host atomics, counted) stands in for
 *     CUDA, and every byte and atomic must pass through it in the process
 *     that owns the buffer; an atomic the part refuses fails the WQE.
 * Every wait has a deadline (10 s) and says what it waited for.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gic/post.h"
#include "gic/recv.h"
#include "gic/softnic.h"
#include "gic/softnic_devmem.h"
#include "gic/softnic_wire.h"
#include "devmem.h" /* white box: a fake CUDA part (case devmem) */

#define RING_BYTES ((size_t)1 << 20) /* small, so that the ring wraps often */
#define BUF_BYTES ((size_t)4 << 20)
#define WAIT_NS 10000000000ull

enum { RQ_LOG = 6, RECV_BYTES = 4096 };

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "test_wire:%d: ", __LINE__);         \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
			failures++;                                          \
		}                                                            \
	} while (0)

#define ALL_RIGHTS (SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ | \
		    SOFTNIC_ACCESS_REMOTE_ATOMIC)

/* case devmem: both sides' buffers are "GPU memory" behind a fake part
 * (set before the fork, so the child has it too). */
static int devmem_mode;
static int fake_moves, fake_atomics;

static int fake_move(void *ctx, const devmem_seg *seg, int n, char *why, size_t len)
{
	(void)ctx, (void)why, (void)len;
	for (int i = 0; i < n; i++)
		memcpy(seg[i].dst, seg[i].src, seg[i].len);
	__atomic_fetch_add(&fake_moves, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Fetch-add and compare-swap of 8 bytes; anything else is refused. */
static int fake_atomic(void *ctx, const devmem_atomic *a, void *t, uint64_t *old, char *why,
		       size_t len)
{
	uint64_t expect = a->cmp;

	(void)ctx;
	if (a->size != 8 || (a->opcode != GIC_OPCODE_ATOMIC_FA && a->opcode != GIC_OPCODE_ATOMIC_CS)) {
		snprintf(why, len, "the fake part runs 8-byte fetch-add and compare-swap only");
		return ENOTSUP;
	}
	if (a->opcode == GIC_OPCODE_ATOMIC_FA) {
		*old = __atomic_fetch_add((uint64_t *)t, a->add, __ATOMIC_SEQ_CST);
	} else {
		__atomic_compare_exchange_n((uint64_t *)t, &expect, a->add, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		*old = expect;
	}
	__atomic_fetch_add(&fake_atomics, 1, __ATOMIC_RELAXED);
	return 0;
}

static void fake_release(void *ctx) { (void)ctx; }

static const devmem_ops fake_ops = { fake_move, fake_atomic, fake_release };

/* One side: softnic, QP, its buffer, what the other side needs. */
typedef struct side {
	softnic *nic;
	softnic_pd *pd;
	softnic_cq *scq, *rcq;
	softnic_qp *qp;
	softnic_mr *mr;
	uint8_t *buf;
	gic_sq sq;
	gic_cq cq, rcqv;
	gic_rq rq;
} side;

typedef struct hello {
	uint32_t qpn, rkey;
	uint64_t addr;
} hello;

static void xfer(int fd, void *p, size_t n, int out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = out ? write(fd, b, n) : read(fd, b, n);

		if (r <= 0) {
			fprintf(stderr, "test_wire: socket %s failed (peer gone?)\n",
				out ? "write" : "read");
			exit(2);
		}
		b += r;
		n -= (size_t)r;
	}
}

static int side_open(side *s, int rights)
{
	softnic_attr a = { .engine_threads = 1 };
	softnic_qp_attr q = { 0 };
	softnic_qp_desc d;

	memset(s, 0, sizeof(*s));
	s->nic = softnic_open(&a);
	if (!s->nic || softnic_wire_enable(s->nic, RING_BYTES))
		return 1;
	s->pd = softnic_pd_alloc(s->nic);
	s->scq = softnic_cq_create(s->nic, 10);
	s->rcq = softnic_cq_create(s->nic, 10);
	q.log_sq_bb = 8;
	q.send_cq = s->scq;
	q.recv_cq = s->rcq;
	q.log_rq_wqe = RQ_LOG;
	q.rq_max_sge = 1;
	q.rnr_retry = 7;
	q.flags = SOFTNIC_QP_NO_IMPLICIT_RECV;
	s->qp = softnic_qp_create(s->pd, &q);
	s->buf = aligned_alloc(4096, BUF_BYTES);
	if (!s->qp || !s->buf)
		return 1;
	memset(s->buf, 0, BUF_BYTES);
	if (devmem_mode && softnic_devmem_attach(s->nic, &fake_ops, NULL))
		return 1;
	s->mr = (devmem_mode ? softnic_reg_device_mr : softnic_reg_mr)(
		s->pd, s->buf, BUF_BYTES, SOFTNIC_ACCESS_LOCAL_WRITE | SOFTNIC_ACCESS_REMOTE_WRITE |
		SOFTNIC_ACCESS_REMOTE_READ | SOFTNIC_ACCESS_REMOTE_ATOMIC);
	softnic_qp_set_rights(s->qp, rights);
	softnic_qp_view(s->qp, &s->sq, &s->cq);
	softnic_cq_view(s->rcq, &s->rcqv);
	softnic_qp_desc_get(s->qp, &d);
	gic_rq_init(&s->rq, d.rq.buf, &d.dbrec[0], d.rq.wqe_cnt, d.rq.stride, 1, 0);
	return !s->mr;
}

static void post_recv(side *s, uint8_t *p, uint32_t len)
{
	gic_sge g = { (uintptr_t)p, softnic_mr_lkey(s->mr), len };

	gic_rq_post(&s->rq, &g, 1);
}

static void side_close(side *s)
{
	softnic_close(s->nic);
	free(s->buf);
}

/* Waits for one CQE of cq. 0, or ETIMEDOUT after saying what it waited for. */
static int wait_cqe(gic_cq *cq, gic_cqe_info *out, const char *what)
{
	uint64_t end = gic_now_ns() + WAIT_NS;

	while (gic_cq_poll_one(cq, out, GIC_ORDER_RELEASE_SYS))
		if (gic_now_ns() > end) {
			fprintf(stderr, "test_wire: no CQE within 10 s for %s\n", what);
			return ETIMEDOUT;
		}
	return 0;
}

/* Rings what was built up to sq.resv. */
static void ring(side *s)
{
	gic_sq_ring(&s->sq, s->sq.resv, GIC_ORDER_RELEASE_SYS);
}

/* Waits for the signaled WQE just rung: its CQE's opcode and syndrome. */
static void expect(side *s, uint8_t cqe_opcode, uint8_t synd, const char *what)
{
	gic_cqe_info i;

	if (wait_cqe(&s->cq, &i, what)) {
		failures++;
		return;
	}
	CHECK(i.cqe_opcode == cqe_opcode && i.syndrome == synd,
	      "%s: CQE opcode 0x%x syndrome 0x%x (vendor 0x%x: %s), wanted 0x%x/0x%x", what,
	      i.cqe_opcode, i.syndrome, i.vendor_syndrome, softnic_vsynd_text(i.vendor_syndrome),
	      cqe_opcode, synd);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 8)) ^ seed);
}

/* Writes len bytes (nsge pieces) to the peer at off, reads them back into
 * the upper half of the buffer, compares. */
static void write_read_back(side *s, const hello *h, size_t len, int nsge, uint32_t seed)
{
	uint8_t *src = s->buf, *back = s->buf + BUF_BYTES / 2;
	uint32_t lkey = softnic_mr_lkey(s->mr);
	char what[64];

	fill(src, len, seed);
	memset(back, 0xee, len);
	if (nsge == 1) {
		s->sq.resv += gic_wqe_write(&s->sq, s->sq.resv, GIC_OPCODE_RDMA_WRITE, h->addr, h->rkey,
					    (uintptr_t)src, lkey, (uint32_t)len, GIC_CTRL_CQ_UPDATE, 0);
	} else {
		/* Three pieces: a write of each, unsignaled but the last. */
		size_t a = len / 3, b = len / 3, c = len - a - b, off[3] = { 0, a, a + b },
		       n[3] = { a, b, c };

		for (int k = 0; k < 3; k++)
			if (n[k])
				s->sq.resv += gic_wqe_write(&s->sq, s->sq.resv, GIC_OPCODE_RDMA_WRITE,
							    h->addr + off[k], h->rkey,
							    (uintptr_t)(src + off[k]), lkey,
							    (uint32_t)n[k],
							    k == 2 ? GIC_CTRL_CQ_UPDATE : 0, 0);
	}
	ring(s);
	snprintf(what, sizeof(what), "write of %zu B", len);
	expect(s, GIC_CQE_REQ, 0, what);
	s->sq.resv += gic_wqe_read(&s->sq, s->sq.resv, h->addr, h->rkey, (uintptr_t)back, lkey,
				   (uint32_t)len, GIC_CTRL_CQ_UPDATE);
	ring(s);
	snprintf(what, sizeof(what), "read of %zu B", len);
	expect(s, GIC_CQE_REQ, 0, what);
	CHECK(!memcmp(src, back, len), "%zu B written then read back differ", len);
}

/* A stream of 600 16 KiB unsignaled writes, every 32nd signaled, waiting
 * for each signaled one only when the SQ would fill; then read back. */
static void write_stream(side *s, const hello *h)
{
	const size_t piece = 16384, n = 600, span = 64 * piece;
	uint32_t lkey = softnic_mr_lkey(s->mr);
	uint8_t *src = s->buf, *back = s->buf + BUF_BYTES / 2;
	size_t outstanding = 0;

	fill(src, span, 99);
	for (size_t i = 0; i < n; i++) {
		int sig = i % 32 == 31;
		size_t off = (i % 64) * piece;

		s->sq.resv += gic_wqe_write(&s->sq, s->sq.resv, GIC_OPCODE_RDMA_WRITE, h->addr + off,
					    h->rkey, (uintptr_t)(src + off), lkey, (uint32_t)piece,
					    sig ? GIC_CTRL_CQ_UPDATE : 0, 0);
		if (sig) {
			ring(s);
			if (++outstanding == 4) { /* 128 BBs in flight of 256 */
				expect(s, GIC_CQE_REQ, 0, "a write of the stream");
				outstanding--;
			}
		}
	}
	ring(s);
	while (outstanding--)
		expect(s, GIC_CQE_REQ, 0, "a write of the stream");
	s->sq.resv += gic_wqe_read(&s->sq, s->sq.resv, h->addr, h->rkey, (uintptr_t)back, lkey,
				   (uint32_t)span, GIC_CTRL_CQ_UPDATE);
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "the stream's read-back");
	CHECK(!memcmp(src, back, span), "the streamed writes read back differ");
}

static void atomics(side *s, const hello *h)
{
	uint64_t *res = (uint64_t *)(s->buf + 64), *back = (uint64_t *)(s->buf + 128);
	uint64_t target = h->addr + BUF_BYTES - 64;
	uint32_t lkey = softnic_mr_lkey(s->mr);

	/* The child zeroed its buffer: 0 + 5 = 5, then CAS(5 -> 42). */
	s->sq.resv += gic_wqe_atomic_fa(&s->sq, s->sq.resv, target, h->rkey, 5, (uintptr_t)res, lkey,
					GIC_CTRL_CQ_UPDATE);
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "fetch-add");
	CHECK(*res == 0, "fetch-add returned %llu, wanted 0", (unsigned long long)*res);
	s->sq.resv += gic_wqe_atomic_cs(&s->sq, s->sq.resv, target, h->rkey, 5, 42, (uintptr_t)res,
					lkey, GIC_CTRL_CQ_UPDATE);
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "compare-swap");
	CHECK(*res == 5, "compare-swap returned %llu, wanted 5", (unsigned long long)*res);
	s->sq.resv += gic_wqe_read(&s->sq, s->sq.resv, target, h->rkey, (uintptr_t)back, lkey, 8,
				   GIC_CTRL_CQ_UPDATE);
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "read of the atomic target");
	CHECK(*back == 42, "atomic target holds %llu, wanted 42", (unsigned long long)*back);
}

/* DUMP of len bytes of the local buffer: a CQE, nothing sent; the next
 * write and its read-back still work. */
static void dump(side *s, const hello *h)
{
	uint32_t c[4], d[4];
	gic_data_seg seg = gic_make_data_seg(256, softnic_mr_lkey(s->mr), (uintptr_t)s->buf);

	gic_ctrl_seg_words(c, (uint16_t)s->sq.resv, GIC_OPCODE_DUMP, 0, s->sq.qpn,
			   GIC_CTRL_CQ_UPDATE, 2, 0);
	memcpy(d, &seg, sizeof(d));
	memcpy(gic_sq_seg(&s->sq, s->sq.resv, 0), c, 16);
	memcpy(gic_sq_seg(&s->sq, s->sq.resv, 1), d, 16);
	s->sq.resv++;
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "DUMP over the wire");
	write_read_back(s, h, 64, 1, 99);
}

/* Messages into the child's receives; the child replies 1 per good one. */
static void messages(side *s, const hello *h, int fd)
{
	uint32_t lkey = softnic_mr_lkey(s->mr);
	uint8_t ok = 0;

	fill(s->buf, 3000, 7);
	s->sq.resv += gic_wqe_send(&s->sq, s->sq.resv, GIC_OPCODE_SEND, (uintptr_t)s->buf, lkey, 3000,
				   GIC_CTRL_CQ_UPDATE, 0);
	s->sq.resv += gic_wqe_send(&s->sq, s->sq.resv, GIC_OPCODE_SEND_IMM, (uintptr_t)s->buf, lkey,
				   100, GIC_CTRL_CQ_UPDATE, gic_htobe32(0xabcd));
	s->sq.resv += gic_wqe_write(&s->sq, s->sq.resv, GIC_OPCODE_RDMA_WRITE_IMM, h->addr + 8192,
				    h->rkey, (uintptr_t)s->buf, lkey, 500, GIC_CTRL_CQ_UPDATE,
				    gic_htobe32(0x1234));
	ring(s);
	expect(s, GIC_CQE_REQ, 0, "send");
	expect(s, GIC_CQE_REQ, 0, "send with immediate");
	expect(s, GIC_CQE_REQ, 0, "write with immediate");
	xfer(fd, &ok, 1, 0);
	CHECK(ok == 3, "the child saw %u of 3 messages right", ok);
}

/* The child: posts receives, checks the three messages, then serves until
 * the parent says stop (or kills it). */
static int child_main(int fd, int rights)
{
	side s;
	hello h;
	gic_cqe_info i;
	uint8_t want[3000], ok = 0, cmd;

	if (side_open(&s, rights)) {
		fprintf(stderr, "test_wire: child: setup failed\n");
		return 2;
	}
	for (int k = 0; k < 3; k++)
		post_recv(&s, s.buf + 65536 + k * RECV_BYTES, RECV_BYTES);
	h.qpn = softnic_qp_num(s.qp);
	h.rkey = softnic_mr_rkey(s.mr);
	h.addr = (uintptr_t)s.buf;
	xfer(fd, &h, sizeof(h), 1);
	xfer(fd, &h, sizeof(h), 0);
	if (softnic_qp_connect_wire(s.qp, h.qpn)) {
		fprintf(stderr, "test_wire: child: connect: %s\n", softnic_last_error(s.nic));
		return 2;
	}
	xfer(fd, &cmd, 1, 1);
	/* 'm': check messages; 'c': report the fake part's counts; 'q': quit;
	 * 'w': wait forever. */
	xfer(fd, &cmd, 1, 0);
	if (cmd == 'c') {
		int counts[2] = { __atomic_load_n(&fake_moves, __ATOMIC_RELAXED),
				  __atomic_load_n(&fake_atomics, __ATOMIC_RELAXED) };

		xfer(fd, counts, sizeof(counts), 1);
		xfer(fd, &cmd, 1, 0);
	}
	if (cmd == 'm') {
		fill(want, sizeof(want), 7);
		ok += !wait_cqe(&s.rcqv, &i, "child: send") && i.cqe_opcode == GIC_CQE_RESP_SEND &&
		      i.byte_cnt == 3000 && !memcmp(s.buf + 65536, want, 3000);
		ok += !wait_cqe(&s.rcqv, &i, "child: send_imm") &&
		      i.cqe_opcode == GIC_CQE_RESP_SEND_IMM && i.imm == gic_htobe32(0xabcd) &&
		      i.byte_cnt == 100 && !memcmp(s.buf + 65536 + RECV_BYTES, want, 100);
		ok += !wait_cqe(&s.rcqv, &i, "child: write_imm") &&
		      i.cqe_opcode == GIC_CQE_RESP_WR_IMM && i.imm == gic_htobe32(0x1234) &&
		      !memcmp(s.buf + 8192, want, 500);
		xfer(fd, &ok, 1, 1);
		xfer(fd, &cmd, 1, 0);
	}
	while (cmd == 'w')
		pause();
	side_close(&s);
	return 0;
}

/* Forks a responder granting rights (before this process has threads:
 * a fork of a threaded process is what ThreadSanitizer refuses). */
static pid_t spawn_peer(int *fd, int rights)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(child_main(sv[1], rights));
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

/* Exchanges QP numbers and keys with the peer and connects to it. */
static int connect_peer(side *s, hello *h, int fd)
{
	hello me;
	uint8_t cmd;

	xfer(fd, h, sizeof(*h), 0);
	me.qpn = softnic_qp_num(s->qp);
	me.rkey = softnic_mr_rkey(s->mr);
	me.addr = (uintptr_t)s->buf;
	xfer(fd, &me, sizeof(me), 1);
	if (softnic_qp_connect_wire(s->qp, h->qpn)) {
		fprintf(stderr, "test_wire: connect: %s\n", softnic_last_error(s->nic));
		return -1;
	}
	xfer(fd, &cmd, 1, 0); /* the child connected */
	return 0;
}

/* A responder, this side opened, the two connected. */
static pid_t start_peer(side *s, hello *h, int *fd, int rights)
{
	pid_t pid = spawn_peer(fd, rights);

	if (pid < 0 || side_open(s, ALL_RIGHTS) || connect_peer(s, h, *fd))
		return -1;
	return pid;
}

static int finish_peer(pid_t pid, int fd, char cmd)
{
	int st = 0;

	xfer(fd, &cmd, 1, 1);
	close(fd);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Good traffic, then a message too long for the ring, then a bad rkey. */
static void case_traffic(void)
{
	static const size_t sizes[] = { 1, 7, 64, 1000, 4096, 65537, 300000, 1 << 20 };
	side s;
	hello h;
	int fd;
	pid_t pid;
	uint32_t lkey;

	if ((pid = start_peer(&s, &h, &fd, ALL_RIGHTS)) < 0) {
		CHECK(0, "setup failed");
		return;
	}
	lkey = softnic_mr_lkey(s.mr);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		write_read_back(&s, &h, sizes[k], 1, (uint32_t)k);
		write_read_back(&s, &h, sizes[k], 3, (uint32_t)k + 50);
	}
	s.sq.resv += gic_wqe_write_inline(&s.sq, s.sq.resv, h.addr + 100, h.rkey, "inline!", 7,
					  GIC_CTRL_CQ_UPDATE);
	s.sq.resv += gic_wqe_read(&s.sq, s.sq.resv, h.addr + 100, h.rkey, (uintptr_t)s.buf + 4096,
				  lkey, 7, GIC_CTRL_CQ_UPDATE);
	ring(&s);
	expect(&s, GIC_CQE_REQ, 0, "inline write");
	expect(&s, GIC_CQE_REQ, 0, "read of the inline write");
	CHECK(!memcmp(s.buf + 4096, "inline!", 7), "inline write read back differs");
	write_stream(&s, &h);
	atomics(&s, &h);
	dump(&s, &h);
	xfer(fd, &(uint8_t){ 'm' }, 1, 1);
	messages(&s, &h, fd);
	s.sq.resv += gic_wqe_write(&s.sq, s.sq.resv, GIC_OPCODE_RDMA_WRITE, h.addr, h.rkey,
				   (uintptr_t)s.buf, lkey, (uint32_t)RING_BYTES + 64, GIC_CTRL_CQ_UPDATE,
				   0);
	s.sq.resv += gic_wqe_nop(&s.sq, s.sq.resv, GIC_CTRL_CQ_UPDATE);
	ring(&s);
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_LENGTH_ERR, "a write larger than the ring");
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, "the NOP after the error");
	CHECK(finish_peer(pid, fd, 'q') == 0, "the child failed");
	side_close(&s);

	/* A bad rkey on a fresh pair: remote access error, then flush. */
	if ((pid = start_peer(&s, &h, &fd, ALL_RIGHTS)) < 0) {
		CHECK(0, "setup failed");
		return;
	}
	lkey = softnic_mr_lkey(s.mr);
	s.sq.resv += gic_wqe_write(&s.sq, s.sq.resv, GIC_OPCODE_RDMA_WRITE, h.addr, h.rkey + 0x100,
				   (uintptr_t)s.buf, lkey, 64, GIC_CTRL_CQ_UPDATE, 0);
	s.sq.resv += gic_wqe_write(&s.sq, s.sq.resv, GIC_OPCODE_RDMA_WRITE, h.addr, h.rkey,
				   (uintptr_t)s.buf, lkey, 64, GIC_CTRL_CQ_UPDATE, 0);
	ring(&s);
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, "a write with a bad rkey");
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, "the write after it");
	CHECK(finish_peer(pid, fd, 'q') == 0, "the child failed");
	side_close(&s);
}

/* The responder QP grants REMOTE_WRITE only: a read fails remotely. */
static void case_rights(void)
{
	side s;
	hello h;
	int fd;
	pid_t pid;

	if ((pid = start_peer(&s, &h, &fd, SOFTNIC_ACCESS_REMOTE_WRITE)) < 0) {
		CHECK(0, "setup failed");
		return;
	}
	s.sq.resv += gic_wqe_write(&s.sq, s.sq.resv, GIC_OPCODE_RDMA_WRITE, h.addr, h.rkey,
				   (uintptr_t)s.buf, softnic_mr_lkey(s.mr), 64, GIC_CTRL_CQ_UPDATE, 0);
	s.sq.resv += gic_wqe_read(&s.sq, s.sq.resv, h.addr, h.rkey, (uintptr_t)s.buf,
				  softnic_mr_lkey(s.mr), 64, GIC_CTRL_CQ_UPDATE);
	ring(&s);
	expect(&s, GIC_CQE_REQ, 0, "a write the QP's rights allow");
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, "a read without REMOTE_READ");
	CHECK(finish_peer(pid, fd, 'q') == 0, "the child failed");
	side_close(&s);
}

/* SIGKILL of the peer: a send in flight (waiting out RNR) fails with a
 * transport retry error and what follows flushes; a second QP, idle when
 * its peer died, flushes its receive at once and fails its next WQE with
 * the retry error. Nothing hangs. */
static void case_peer_death(void)
{
	side s, idle;
	hello h, h2;
	int fd, fd2, st;
	pid_t pid, pid2;
	gic_cqe_info i;
	uint32_t lkey;

	pid = spawn_peer(&fd, ALL_RIGHTS);
	pid2 = spawn_peer(&fd2, ALL_RIGHTS);
	if (pid < 0 || pid2 < 0 || side_open(&s, ALL_RIGHTS) || side_open(&idle, ALL_RIGHTS) ||
	    connect_peer(&s, &h, fd) || connect_peer(&idle, &h2, fd2)) {
		CHECK(0, "setup failed");
		return;
	}
	xfer(fd, &(uint8_t){ 'w' }, 1, 1);
	xfer(fd2, &(uint8_t){ 'w' }, 1, 1);
	post_recv(&idle, idle.buf, 64);
	/* Four sends to three receives: the fourth waits out RNR (forever)
	 * and is in flight when the peer dies. */
	lkey = softnic_mr_lkey(s.mr);
	for (int k = 0; k < 4; k++)
		s.sq.resv += gic_wqe_send(&s.sq, s.sq.resv, GIC_OPCODE_SEND, (uintptr_t)s.buf, lkey, 64,
					  GIC_CTRL_CQ_UPDATE, 0);
	ring(&s);
	for (int k = 0; k < 3; k++)
		expect(&s, GIC_CQE_REQ, 0, "a send into a posted receive");
	usleep(50000);
	kill(pid, SIGKILL);
	kill(pid2, SIGKILL);
	waitpid(pid, &st, 0);
	waitpid(pid2, &st, 0);
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR,
	       "a send in flight when its peer was killed");
	for (int k = 0; k < 2; k++)
		s.sq.resv += gic_wqe_write(&s.sq, s.sq.resv, GIC_OPCODE_RDMA_WRITE, h.addr, h.rkey,
					   (uintptr_t)s.buf, lkey, 4096, GIC_CTRL_CQ_UPDATE, 0);
	ring(&s);
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, "a write after the error");
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, "the second write after the error");
	if (!wait_cqe(&idle.rcqv, &i, "the idle QP's receive flush"))
		CHECK(i.cqe_opcode == GIC_CQE_RESP_ERR && i.syndrome == GIC_SYND_WR_FLUSH_ERR,
		      "the idle QP's receive: CQE 0x%x syndrome 0x%x, wanted a flush", i.cqe_opcode,
		      i.syndrome);
	else
		failures++;
	/* The idle QP's next WQE says why, the one after it flushes. */
	for (int k = 0; k < 2; k++)
		idle.sq.resv += gic_wqe_write(&idle.sq, idle.sq.resv, GIC_OPCODE_RDMA_WRITE, h2.addr,
					      h2.rkey, (uintptr_t)idle.buf, softnic_mr_lkey(idle.mr),
					      64, GIC_CTRL_CQ_UPDATE, 0);
	ring(&idle);
	expect(&idle, GIC_CQE_REQ_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR,
	       "the first write of a QP whose peer died while it was idle");
	expect(&idle, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, "the write after it");
	close(fd);
	close(fd2);
	side_close(&s);
	side_close(&idle);
}

/* Both buffers "GPU memory": writes of 1 B to 1 MiB (one and three SGEs,
 * inline), read back, and atomics, each byte through the fake part of the
 * process that owns it; a masked atomic the responder's part refuses
 * fails with a remote access error. */
static void case_devmem(void)
{
	static const size_t sizes[] = { 1, 64, 4096, 65537, 1 << 20 };
	const int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
	gic_masked_args m = { 1, 0xff, 0, 0 };
	int counts[2] = { 0, 0 }, fd, mine, wqes = 0;
	side s;
	hello h;
	pid_t pid;

	devmem_mode = 1;
	if ((pid = start_peer(&s, &h, &fd, ALL_RIGHTS)) < 0) {
		CHECK(0, "setup failed");
		devmem_mode = 0;
		return;
	}
	for (int k = 0; k < n; k++) {
		write_read_back(&s, &h, sizes[k], 1, (uint32_t)k);
		write_read_back(&s, &h, sizes[k], 3, (uint32_t)k + 50);
		/* Two reads, one write and the three pieces that are not empty. */
		wqes += 3 + (sizes[k] / 3 > 0) * 2 + 1;
	}
	s.sq.resv += gic_wqe_write_inline(&s.sq, s.sq.resv, h.addr + 100, h.rkey, "inline!", 7,
					  GIC_CTRL_CQ_UPDATE);
	s.sq.resv += gic_wqe_read(&s.sq, s.sq.resv, h.addr + 100, h.rkey, (uintptr_t)s.buf + 4096,
				  softnic_mr_lkey(s.mr), 7, GIC_CTRL_CQ_UPDATE);
	ring(&s);
	expect(&s, GIC_CQE_REQ, 0, "inline write (GPU memory)");
	expect(&s, GIC_CQE_REQ, 0, "read of the inline write (GPU memory)");
	CHECK(!memcmp(s.buf + 4096, "inline!", 7), "inline write into GPU memory read back differs");
	atomics(&s, &h);
	xfer(fd, &(uint8_t){ 'c' }, 1, 1);
	xfer(fd, counts, sizeof(counts), 0);
	/* One move per WQE and side that touches GPU memory. Requester: each
	 * write's payload out, each read-back in, the 7-byte read, the two
	 * atomic results and the target's read (an inline payload is the
	 * WQE's own). Responder: each write in, each read out, the inline
	 * write, the 7-byte read and the target's read. */
	mine = __atomic_load_n(&fake_moves, __ATOMIC_RELAXED);
	CHECK(mine == wqes + 4, "the requester's part moved %d times, expected %d", mine, wqes + 4);
	CHECK(counts[0] == wqes + 3, "the responder's part moved %d times, expected %d", counts[0],
	      wqes + 3);
	CHECK(counts[1] == 2, "the responder's part ran %d atomics, expected 2", counts[1]);
	CHECK(__atomic_load_n(&fake_atomics, __ATOMIC_RELAXED) == 0,
	      "the requester's part ran atomics: they belong to the responder");
	s.sq.resv += gic_wqe_masked_atomic(&s.sq, s.sq.resv, GIC_OPCODE_ATOMIC_MASKED_FA, 8,
					   h.addr + 256, h.rkey, &m, (uintptr_t)s.buf + 64,
					   softnic_mr_lkey(s.mr), GIC_CTRL_CQ_UPDATE);
	ring(&s);
	expect(&s, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR,
	       "a masked atomic the responder's CUDA part refuses");
	CHECK(finish_peer(pid, fd, 'q') == 0, "the child failed");
	side_close(&s);
	devmem_mode = 0;
}

/* Argument checks. */
static void case_args(void)
{
	side s;

	CHECK(softnic_wire_enable(NULL, 0) == EINVAL, "enable(NULL)");
	if (side_open(&s, ALL_RIGHTS)) {
		CHECK(0, "setup failed");
		return;
	}
	CHECK(softnic_wire_enable(s.nic, 0) == EEXIST, "enable twice");
	CHECK(softnic_qp_connect_wire(NULL, 0x1000) == EINVAL, "connect(NULL)");
	CHECK(softnic_qp_connect_wire(s.qp, softnic_qp_num(s.qp)) == EINVAL, "connect to itself");
	CHECK(softnic_qp_connect_wire(s.qp, 0x5) == ENOENT, "connect to QP 5 (no block 0)");
	errno = 0;
	CHECK(!softnic_reg_device_mr(s.pd, s.buf, 64, 0) && errno == EINVAL,
	      "reg_device_mr without a CUDA part");
	CHECK(softnic_devmem_attach(s.nic, &fake_ops, NULL) == 0, "attaching a part");
	CHECK(softnic_devmem_attach(s.nic, &fake_ops, NULL) == EINVAL, "attaching a second part");
	side_close(&s);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	signal(SIGPIPE, SIG_IGN);
	if (!only || !strcmp(only, "args"))
		case_args();
	if (!only || !strcmp(only, "traffic"))
		case_traffic();
	if (!only || !strcmp(only, "rights"))
		case_rights();
	if (!only || !strcmp(only, "peer_death"))
		case_peer_death();
	if (!only || !strcmp(only, "devmem"))
		case_devmem();
	printf("test_wire: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
