/*
 * The project's mlx5 provider between two processes on the emulated
 * device, through gic/provider.h: the test forks; each process opens
 * mlx5_0 with gic_provider_mlx5, and the two exchange connection records
 * (the wire format) over a socketpair, connect, and take turns: the
 * reader prepares its region (a sentinel everywhere, a counter) and says
 * READY; the writer posts writes of many sizes (signaled and unsignaled
 * chains), inline writes whose sources it overwrites at once, and a chain
 * of fetch-and-adds on the reader's counter, checks every completion and
 * every old value, and says DONE; the reader checks every byte of its
 * region and answers with its failures. Then they swap. Run with
 * LD_LIBRARY_PATH=<build>/emu; exit 0 when both processes passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gic/provider.h"
#include "mlx5_provider_kit.h"
#include "peer_mem.h"

enum { MSG_RECORD = 1, MSG_READY, MSG_DONE, MSG_RESULT };

enum {
	INLINE_OFF = 600 << 10,        /* inline writes land here, 128 bytes apart */
	COUNTER_OFF = PK_REGION - 64,  /* the fetch-and-add target */
	SENTINEL = 0xee,
	ROUNDS = 2,                    /* each direction this often */
};

static const uint32_t sizes[] = { 1, 3, 8, 16, 63, 64, 65, 255, 1000, 4095, 4096, 4097, 8192,
				  12345, 65536, 100000, 262144 };
static const uint32_t inline_sizes[] = { 1, 5, 12, 13, 28, 29, 44, 45, 60, 64 };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct msg {
	uint32_t kind;
	uint32_t failed;       /* MSG_RESULT */
	uint64_t value;        /* MSG_READY: the counter's start */
	uint8_t record[GIC_CONN_WIRE_BYTES]; /* MSG_RECORD */
} msg;

static const char *who = "parent";

static int send_msg(int fd, const msg *m)
{
	return write(fd, m, sizeof(*m)) == (ssize_t)sizeof(*m) ? 0 : EIO;
}

/* Reads one message of kind (10 s at most: the socket has a timeout). */
static int recv_msg(int fd, uint32_t kind, msg *m)
{
	size_t got = 0;

	while (got < sizeof(*m)) {
		ssize_t k = read(fd, (char *)m + got, sizeof(*m) - got);

		if (k <= 0)
			return EIO;
		got += (size_t)k;
	}
	return m->kind == kind ? 0 : EPROTO;
}

/* The pattern of write i of round r by writer id. */
static unsigned seed_of(int id, int round, int i)
{
	return (unsigned)(id * 1000 + round * 100 + i + 1);
}

/* Offset of size-write i (each followed by a 64-byte gap). */
static uint64_t write_off(int i)
{
	uint64_t off = 0;

	for (int k = 0; k < i; k++)
		off += sizes[k] + 64;
	return off;
}

/* ------------------------------------------------------------------ */
/* The writer's side of one round. */

static void post_sizes(pk_pe *p, const gic_conn_info *peer, int id, int round)
{
	gic_wr w[GIC_POST_MAX_CHAIN];
	int k = 0, n = COUNT(sizes);

	for (int i = 0; i < n; i++) {
		uint64_t off = write_off(i);

		pk_fill(p->buf + off, sizes[i], seed_of(id, round, i));
		w[k] = (gic_wr){ .wr_id = ((uint64_t)round << 16) | (uint64_t)i, .op = GIC_WR_WRITE,
				 .len = sizes[i], .laddr = (uint64_t)(uintptr_t)(p->buf + off),
				 .lkey = p->mr->lkey, .raddr = peer->addr + off, .rkey = peer->rkey,
				 .signaled = (uint8_t)(round % 2 || i % 5 == 4 || i + 1 == n) };
		if (++k == 8 || i + 1 == n) {
			CHECK(pk_post_wait(p, w, k) == 0, "%s: writes to %d: %s", who, i,
			      gic_nic_error(p->nic));
			k = 0;
		}
	}
}

static void post_inline(pk_pe *p, const gic_conn_info *peer, int id, int round)
{
	gic_wr w[COUNT(inline_sizes)];

	for (int i = 0; i < COUNT(inline_sizes); i++) {
		uint64_t off = INLINE_OFF + (uint64_t)i * 128;

		pk_fill(p->buf + off, inline_sizes[i], seed_of(id, round, 50 + i));
		w[i] = (gic_wr){ .wr_id = 0x100 + (uint64_t)i, .op = GIC_WR_WRITE, .inline_data = 1,
				 .len = inline_sizes[i], .laddr = (uint64_t)(uintptr_t)(p->buf + off),
				 .lkey = p->mr->lkey, .raddr = peer->addr + off, .rkey = peer->rkey,
				 .signaled = (uint8_t)(i % 4 == 3 || i + 1 == COUNT(inline_sizes)) };
	}
	/* The sources are overwritten right after the post: inline copied them. */
	CHECK(pk_post_then(p, w, COUNT(inline_sizes), 0x5a) == 0, "%s: inline writes: %s", who,
	      gic_nic_error(p->nic));
}

/* A chain of fetch-and-adds on the peer's counter (start: its READY value). */
static void post_atomics(pk_pe *p, const gic_conn_info *peer, int id, uint64_t start)
{
	enum { N = GIC_POST_MAX_CHAIN };
	uint64_t *old = (uint64_t *)(void *)(p->buf + COUNTER_OFF - 4096);
	uint64_t sum = start;
	gic_wr w[N];

	memset(old, 0, N * 8);
	for (int i = 0; i < N; i++)
		w[i] = (gic_wr){ .wr_id = 0x200 + (uint64_t)i, .op = GIC_WR_ATOMIC_FA,
				 .laddr = (uint64_t)(uintptr_t)&old[i], .lkey = p->mr->lkey,
				 .raddr = peer->addr + COUNTER_OFF, .rkey = peer->rkey,
				 .add = (uint64_t)(id + 1) * (uint64_t)(i + 1),
				 .signaled = (uint8_t)(i % 3 == 2 || i + 1 == N) };
	CHECK(pk_post_wait(p, w, N) == 0, "%s: fetch-and-adds: %s", who, gic_nic_error(p->nic));
	for (int i = 0; i < N; i++) {
		CHECK(old[i] == sum, "%s: fetch-and-add %d returned %llu, want %llu", who, i,
		      (unsigned long long)old[i], (unsigned long long)sum);
		sum += w[i].add;
	}
}

static int write_round(pk_pe *p, int fd, const gic_conn_info *peer, int id, int round)
{
	msg m;
	int rc = recv_msg(fd, MSG_READY, &m);

	if (rc)
		return rc;
	post_sizes(p, peer, id, round);
	post_inline(p, peer, id, round);
	post_atomics(p, peer, id, m.value);
	m = (msg){ .kind = MSG_DONE };
	rc = send_msg(fd, &m);
	if (!rc)
		rc = recv_msg(fd, MSG_RESULT, &m);
	CHECK(!rc && m.failed == 0, "%s: the peer found %u bad byte ranges in round %d", who,
	      rc ? 0 : m.failed, round);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The reader's side of one round: what the writer id must have left. */

static uint32_t check_region(const pk_pe *p, int id, int round, uint64_t start)
{
	uint8_t want[262144];
	uint64_t sum = start, counter;
	uint32_t bad = 0, end = (uint32_t)write_off(COUNT(sizes));

	for (int i = 0; i < COUNT(sizes); i++) {
		uint64_t off = write_off(i);

		pk_fill(want, sizes[i], seed_of(id, round, i));
		bad += !pk_same(p->buf + off, want, sizes[i]);
		bad += !pk_all(p->buf + off + sizes[i], SENTINEL, 64);
	}
	bad += !pk_all(p->buf + end, SENTINEL, INLINE_OFF - end);
	for (int i = 0; i < COUNT(inline_sizes); i++) {
		uint64_t off = INLINE_OFF + (uint64_t)i * 128;

		pk_fill(want, inline_sizes[i], seed_of(id, round, 50 + i));
		bad += !pk_same(p->buf + off, want, inline_sizes[i]);
		bad += !pk_all(p->buf + off + inline_sizes[i], SENTINEL, 128 - inline_sizes[i]);
	}
	for (int i = 0; i < GIC_POST_MAX_CHAIN; i++)
		sum += (uint64_t)(id + 1) * (uint64_t)(i + 1);
	memcpy(&counter, p->buf + COUNTER_OFF, 8);
	bad += counter != sum;
	CHECK(bad == 0, "%s: %u bad byte ranges after round %d of writer %d (counter %llu, want "
	      "%llu)", who, bad, round, id, (unsigned long long)counter, (unsigned long long)sum);
	return bad;
}

static int read_round(pk_pe *p, int fd, int writer_id, int round)
{
	uint64_t start = 0x7000000000000000ull + (uint64_t)round * 977u;
	msg m = { .kind = MSG_READY, .value = start };
	int rc;

	peer_mem_begin(); /* the peer's engine thread writes this region */
	memset(p->buf, SENTINEL, PK_REGION);
	memcpy(p->buf + COUNTER_OFF, &start, 8);
	peer_mem_end();
	rc = send_msg(fd, &m);
	if (!rc)
		rc = recv_msg(fd, MSG_DONE, &m);
	if (rc)
		return rc;
	peer_mem_begin();
	m = (msg){ .kind = MSG_RESULT, .failed = check_region(p, writer_id, round, start) };
	peer_mem_end();
	return send_msg(fd, &m);
}

/* ------------------------------------------------------------------ */

/* Opens, exchanges records over fd, connects. */
static int setup(pk_pe *p, int fd, gic_conn_info *peer)
{
	msg m = { .kind = MSG_RECORD };
	int rc = pk_open(p, 8);

	if (!rc)
		rc = gic_conn_pack(&p->me, m.record, sizeof(m.record));
	if (!rc)
		rc = send_msg(fd, &m);
	if (!rc)
		rc = recv_msg(fd, MSG_RECORD, &m);
	if (!rc)
		rc = gic_conn_unpack(m.record, sizeof(m.record), peer, NULL);
	if (!rc)
		rc = gic_nic_qp_connect(p->qp, &p->me, peer);
	if (rc)
		fprintf(stderr, "%s: setup: %s (%s)\n", who, strerror(rc), gic_nic_error(p->nic));
	return rc;
}

/* One process: id 0 (parent) writes first. Returns its failures. */
static int run(int fd, int id)
{
	pk_pe p;
	gic_conn_info peer;
	int rc = setup(&p, fd, &peer);

	for (int r = 0; !rc && r < ROUNDS; r++)
		for (int writer = 0; !rc && writer < 2; writer++)
			rc = writer == id ? write_round(&p, fd, &peer, id, r)
					  : read_round(&p, fd, writer, r);
	CHECK(rc == 0, "%s: %s", who, strerror(rc));
	if (!rc)
		printf("%s (pid %d): QP 0x%x <-> peer QP 0x%x, %d rounds each way\n", who, (int)getpid(),
		       p.qp->qpn, peer.qpn, ROUNDS);
	pk_close(&p);
	printf("%s: %d checks, %d failed\n", who, checks, failed);
	fflush(stdout);
	return failed;
}

int main(void)
{
	struct timeval tv = { .tv_sec = 20 };
	int sv[2], status = 0, mine;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	for (int i = 0; i < 2; i++)
		setsockopt(sv[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		close(sv[0]);
		who = "child";
		_exit(run(sv[1], 1) ? 1 : 0);
	}
	close(sv[1]);
	mine = run(sv[0], 0);
	close(sv[0]); /* a child still waiting sees EOF */
	if (waitpid(child, &status, 0) != child)
		status = -1;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status 0x%x", status);
	printf("test_mlx5_provider_xproc: %s\n",
	       !mine && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "both passed" : "FAILED");
	return mine || !WIFEXITED(status) || WEXITSTATUS(status) ? 1 : 0;
}
