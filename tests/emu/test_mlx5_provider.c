/*
 * The project's mlx5 provider (gic_provider_mlx5, src/nic/mlx5) end to end
 * on the emulated device, through gic/provider.h: two PEs of one process
 * open mlx5_0, register, create CQs and RC QPs (mlx5dv_create_cq/_qp),
 * exchange connection records in the wire format, connect, and post from
 * the host: writes of many sizes (signaled and unsignaled, chains of up to
 * GIC_POST_MAX_CHAIN), inline writes, fetch-and-adds, a ring that wraps,
 * a QP posted through its views with gic/post.h's builders, and an error
 * completion; every payload byte and every completion is checked. The
 * provider is linked against the installed rdma-core and run with
 * LD_LIBRARY_PATH=<build>/emu (GIC_EMU_LINK=roce: the RoCE path).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/mlx5_provider.h"
#include "gic/provider.h"
#include "mlx5_provider_kit.h"

/* ------------------------------------------------------------------ */
/* Host posting through gic_nic_post. */

/* Writes of the sizes in len[0..n) from a to b at increasing offsets,
 * chained by GIC_POST_MAX_CHAIN, signaled per `signal` (0: only a chain's
 * last, 1: every one); b's region starts filled with a sentinel, so that
 * bytes outside the writes are checked unchanged too. */
static void write_sizes(pk_pe *a, pk_pe *b, const gic_conn_info *rb, const uint32_t *len, int n,
			int signal, unsigned seed)
{
	gic_wr w[GIC_POST_MAX_CHAIN];
	uint64_t off = 0, end;
	int k = 0;

	memset(b->buf, 0xee, PK_REGION);
	for (int i = 0; i < n; i++) {
		pk_fill(a->buf + off, len[i], seed + (unsigned)i);
		w[k] = (gic_wr){ .wr_id = 0x1000 + (uint64_t)i, .op = GIC_WR_WRITE, .len = len[i],
				 .laddr = (uint64_t)(uintptr_t)(a->buf + off), .lkey = a->mr->lkey,
				 .raddr = rb->addr + off, .rkey = rb->rkey,
				 .signaled = (uint8_t)(signal || i + 1 == n ||
						       k + 1 == GIC_POST_MAX_CHAIN) };
		off += len[i] + 64; /* a gap that must stay as it was */
		if (++k == GIC_POST_MAX_CHAIN || i + 1 == n) {
			CHECK(pk_post_wait(a, w, k) == 0, "writes %d..%d: %s", i + 1 - k, i,
			      gic_nic_error(a->nic));
			k = 0;
		}
	}
	end = off;
	off = 0;
	for (int i = 0; i < n; i++) {
		CHECK(pk_same(b->buf + off, a->buf + off, len[i]),
		      "write %d (%u bytes at %llu): payload differs", i, len[i],
		      (unsigned long long)off);
		CHECK(pk_all(b->buf + off + len[i], 0xee, 64), "write %d: bytes after it changed", i);
		off += len[i] + 64;
	}
	CHECK(pk_all(b->buf + end, 0xee, PK_REGION - end), "bytes beyond the writes changed");
}

static void write_cases(pk_pe *a, pk_pe *b, const gic_conn_info *ra, const gic_conn_info *rb)
{
	static const uint32_t sizes[] = { 1, 2, 7, 8, 15, 16, 63, 64, 65, 127, 128, 511, 1000,
					  4095, 4096, 4097, 9000, 65536, 131071, 262144 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };

	write_sizes(a, b, rb, sizes, N, 1, 11);
	write_sizes(a, b, rb, sizes, N, 0, 23);
	write_sizes(b, a, ra, sizes, N, 0, 37); /* and the other way */
}

/* Inline writes up to the QP's max_inline: the payload is copied at post
 * time, so overwriting the source right after the post changes nothing. */
static void inline_cases(pk_pe *a, pk_pe *b, const gic_conn_info *rb)
{
	static const uint32_t sizes[] = { 1, 4, 12, 13, 28, 29, 44, 45, 60, 61, 63, 64 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	uint32_t max = a->qp->max_inline;
	gic_wr w[N];
	uint64_t off = 0;
	uint8_t keep[4096];

	CHECK(max >= 64, "max_inline %u (the provider asks for 64)", max);
	memset(b->buf, 0xee, PK_REGION);
	for (int i = 0; i < N; i++, off += 128) {
		pk_fill(a->buf + off, sizes[i], 300 + (unsigned)i);
		w[i] = (gic_wr){ .wr_id = 0x2000 + (uint64_t)i, .op = GIC_WR_WRITE, .inline_data = 1,
				 .len = sizes[i], .laddr = (uint64_t)(uintptr_t)(a->buf + off),
				 .lkey = a->mr->lkey, .raddr = rb->addr + off, .rkey = rb->rkey,
				 .signaled = (uint8_t)(i % 3 == 2 || i + 1 == N) };
	}
	memcpy(keep, a->buf, off);
	CHECK(pk_post_then(a, w, N, 0xa5) == 0, "inline chain: %s", gic_nic_error(a->nic));
	off = 0;
	for (int i = 0; i < N; i++, off += 128)
		CHECK(pk_same(b->buf + off, keep + off, sizes[i]) &&
			      pk_all(b->buf + off + sizes[i], 0xee, 128 - sizes[i]),
		      "inline write %d (%u bytes) differs", i, sizes[i]);
	w[0].len = max + 1;
	CHECK(gic_nic_post(a->qp, w, 1) == EINVAL, "inline above max_inline is refused");
}

/* Fetch-and-adds on one remote counter: each old value is the sum of the
 * addends before it, and the counter ends at the total. */
static void atomic_cases(pk_pe *a, pk_pe *b, const gic_conn_info *rb)
{
	enum { N = GIC_POST_MAX_CHAIN };
	uint64_t *counter = (uint64_t *)(void *)b->buf, *old = (uint64_t *)(void *)a->buf;
	uint64_t sum = 0x1234567890abcdefull;
	gic_wr w[N];

	*counter = sum;
	memset(old, 0, N * 8);
	for (int i = 0; i < N; i++)
		w[i] = (gic_wr){ .wr_id = 0x3000 + (uint64_t)i, .op = GIC_WR_ATOMIC_FA,
				 .laddr = (uint64_t)(uintptr_t)&old[i], .lkey = a->mr->lkey,
				 .raddr = rb->addr, .rkey = rb->rkey,
				 .add = (uint64_t)(i + 1) << (i * 3), .signaled = (uint8_t)(i % 4 == 3) };
	CHECK(pk_post_wait(a, w, N) == 0, "fetch-and-add chain: %s", gic_nic_error(a->nic));
	for (int i = 0; i < N; i++) {
		CHECK(old[i] == sum, "fetch-and-add %d returned 0x%llx, want 0x%llx", i,
		      (unsigned long long)old[i], (unsigned long long)sum);
		sum += w[i].add;
	}
	CHECK(*counter == sum, "counter 0x%llx, want 0x%llx", (unsigned long long)*counter,
	      (unsigned long long)sum);
}

/* ------------------------------------------------------------------ */
/* A small ring, wrapped many times: ENOBUFS when full, then room again. */

static void wrap_case(void)
{
	enum { WRITES = 700, LEN = 200 };
	pk_pe a, b;
	gic_conn_info ra, rb;
	int refused = 0;

	if (pk_pair(&a, &b, &ra, &rb, 6)) {
		CHECK(0, "a pair with 2^6-BB rings: %s", gic_nic_error(a.nic));
		pk_close(&b);
		pk_close(&a);
		return;
	}
	pk_fill(a.buf, WRITES * LEN, 77);
	for (int i = 0; i < WRITES;) {
		gic_wr w[GIC_POST_MAX_CHAIN];
		int k = 0, rc;

		for (; k < GIC_POST_MAX_CHAIN && i + k < WRITES; k++)
			w[k] = (gic_wr){ .wr_id = (uint64_t)(i + k), .op = GIC_WR_WRITE, .len = LEN,
					 .laddr = (uint64_t)(uintptr_t)(a.buf + (size_t)(i + k) * LEN),
					 .lkey = a.mr->lkey, .raddr = rb.addr + (uint64_t)(i + k) * LEN,
					 .rkey = rb.rkey, .signaled = (uint8_t)((i + k) % 8 == 7) };
		w[k - 1].signaled = 1;
		rc = pk_post_retry(&a, w, k, &refused);
		CHECK(rc == 0, "writes at %d: %d %s", i, rc, gic_nic_error(a.nic));
		if (rc)
			break;
		i += k;
	}
	CHECK(pk_drain(&a) == 0, "the last completions: %s", gic_nic_error(a.nic));
	CHECK(pk_same(b.buf, a.buf, (size_t)WRITES * LEN), "the %d wrapped writes differ", WRITES);
	CHECK(refused > 0, "a 2^6-BB ring never answered ENOBUFS in %d writes", WRITES);
	pk_close(&b);
	pk_close(&a);
}

/* ------------------------------------------------------------------ */
/* Posting through the QP's host views with gic/post.h's builders (what a
 * GPU thread does with device views): rdma-core made the queues,
 * mlx5dv_init_obj described them, the project's WQEs run in them. */

static int view_post(gic_sq *sq, uint32_t nbb, uint64_t *pos)
{
	return gic_sq_reserve_excl(sq, nbb, pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + PK_WAIT_NS);
}

static void view_case(void)
{
	pk_pe a, b;
	gic_conn_info ra, rb;
	gic_sq sq;
	gic_cq cq;
	uint64_t pos, *counter, *old, value = 0x0123456789abcdefull;
	const uint8_t msg[44] = "inline bytes built by gic_wqe_write_inline";

	if (pk_pair(&a, &b, &ra, &rb, 8) || gic_nic_qp_view(a.qp, GIC_VIEW_HOST, &sq, &cq)) {
		CHECK(0, "pair and host view: %s", gic_nic_error(a.nic));
		pk_close(&b);
		pk_close(&a);
		return;
	}
	CHECK(sq.bb_cnt == 256 && sq.qpn == a.qp->qpn && sq.cq == &cq && cq.cqe_cnt == 64 &&
		      sq.db && sq.dbrec && sq.max_inline == a.qp->max_inline,
	      "view: %u BBs, qpn 0x%x, %u CQEs", sq.bb_cnt, sq.qpn, cq.cqe_cnt);
	memset(b.buf, 0, PK_REGION);
	pk_fill(a.buf, 8192, 99);
	counter = (uint64_t *)(void *)(b.buf + 16384);
	old = (uint64_t *)(void *)(a.buf + 16384);
	*counter = 1000;
	*old = 0;
	CHECK(view_post(&sq, 1, &pos) == 0, "reserve");
	gic_wqe_write(&sq, pos, GIC_OPCODE_RDMA_WRITE, rb.addr, rb.rkey,
		      (uint64_t)(uintptr_t)a.buf, a.mr->lkey, 8192, 0, 0);
	CHECK(view_post(&sq, 1, &pos) == 0, "reserve");
	gic_wqe_write_inline_u64(&sq, pos, rb.addr + 8192, rb.rkey, value, 0);
	CHECK(view_post(&sq, gic_bb_for_ds(gic_ds_inline_write(sizeof(msg))), &pos) == 0, "reserve");
	gic_wqe_write_inline(&sq, pos, rb.addr + 8200, rb.rkey, msg, sizeof(msg), 0);
	CHECK(view_post(&sq, 1, &pos) == 0, "reserve");
	gic_wqe_atomic_fa(&sq, pos, rb.addr + 16384, rb.rkey, 24, (uint64_t)(uintptr_t)old,
			  a.mr->lkey, GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(&sq, pos + 1, 0);
	gic_sq_publish_excl(&sq, GIC_ORDER_RELEASE_SYS);
	CHECK(gic_sq_wait_retired(&sq, pos + 1, 0, GIC_ORDER_RELEASE_SYS,
				  gic_now_ns() + PK_WAIT_NS) == 0 && !sq.err,
	      "view WQEs retired: err %u syndrome 0x%x", sq.err, sq.err_info.syndrome);
	CHECK(pk_same(b.buf, a.buf, 8192), "view write payload differs");
	CHECK(!memcmp(b.buf + 8192, &value, 8), "inline u64 differs");
	CHECK(!memcmp(b.buf + 8200, msg, sizeof(msg)), "inline payload differs");
	CHECK(*old == 1000 && *counter == 1024, "view fetch-and-add: old %llu counter %llu",
	      (unsigned long long)*old, (unsigned long long)*counter);
	pk_close(&b);
	pk_close(&a);
}

/* ------------------------------------------------------------------ */
/* Errors: a bad rkey completes in error, what follows is flushed. */

static void error_case(void)
{
	pk_pe a, b;
	gic_conn_info ra, rb;
	gic_wr w[2];
	gic_wc wc[2];
	int got = 0;

	if (pk_pair(&a, &b, &ra, &rb, 8)) {
		CHECK(0, "pair: %s", gic_nic_error(a.nic));
		pk_close(&b);
		pk_close(&a);
		return;
	}
	for (int i = 0; i < 2; i++)
		w[i] = (gic_wr){ .wr_id = 0x4000 + (uint64_t)i, .op = GIC_WR_WRITE, .len = 64,
				 .laddr = (uint64_t)(uintptr_t)a.buf, .lkey = a.mr->lkey,
				 .raddr = rb.addr, .rkey = i ? rb.rkey : rb.rkey ^ 0x5a5a00,
				 .signaled = 1 };
	CHECK(gic_nic_post(a.qp, w, 2) == 0, "post: %s", gic_nic_error(a.nic));
	CHECK(pk_poll_n(&a, wc, 2, &got) == 0 && got == 2, "2 completions, got %d", got);
	CHECK(got < 1 || (wc[0].wr_id == 0x4000 && wc[0].status == GIC_SYND_REMOTE_ACCESS_ERR &&
			  wc[0].qpn == a.qp->qpn),
	      "bad rkey: wr_id 0x%llx status 0x%x", (unsigned long long)wc[0].wr_id, wc[0].status);
	CHECK(got < 2 || (wc[1].wr_id == 0x4001 && wc[1].status == GIC_SYND_WR_FLUSH_ERR),
	      "after it: wr_id 0x%llx status 0x%x", (unsigned long long)wc[1].wr_id, wc[1].status);
	CHECK(strstr(gic_nic_error(a.nic), "QP 0x") != NULL, "the error names the QP: '%s'",
	      gic_nic_error(a.nic));
	pk_close(&b);
	pk_close(&a);
}

/* ------------------------------------------------------------------ */
/* Bad input through the interface: refused, never a crash. */

static void argument_cases(pk_pe *a)
{
	gic_nic_attr none = { .device = "mlx5_9" };
	gic_qp_attr qa = { .send_cq = NULL };
	gic_wr w = { .op = 9, .len = 8 };
	gic_wc wc;
	gic_sq sq;
	gic_cq cq;
	char err[GIC_NIC_ERR_LEN] = "";
	int got = -1;

	errno = 0;
	CHECK(!gic_nic_open(&gic_provider_mlx5, &none, err, sizeof(err)) && errno == ENODEV &&
		      strstr(err, "mlx5_9") && strstr(err, "mlx5_0"),
	      "a device that is not there: errno %d '%s'", errno, err);
	errno = 0;
	CHECK(!gic_nic_cq_create(a->nic, 0) && errno == EINVAL, "2^0 CQEs");
	errno = 0;
	CHECK(!gic_nic_qp_create(a->nic, &qa) && errno == EINVAL, "QP without a CQ");
	errno = 0;
	CHECK(!gic_nic_reg_mr(a->nic, NULL, 64, GIC_ACCESS_ALL) && errno, "register NULL");
	CHECK(gic_nic_post(a->qp, &w, 0) == EINVAL && gic_nic_post(a->qp, &w, 17) == EINVAL,
	      "chain lengths 0 and 17");
	CHECK(gic_nic_post(a->qp, &w, 1) == EINVAL, "unknown opcode");
	CHECK(gic_nic_poll(a->cq, NULL, 1, &got) == EINVAL && got == 0, "poll into NULL");
	CHECK(gic_nic_poll(a->cq, &wc, -1, &got) == EINVAL, "poll -1");
	CHECK(gic_nic_poll(a->cq, &wc, 1, &got) == 0 && got == 0, "nothing outstanding");
	CHECK(gic_nic_qp_view(a->qp, 7, &sq, &cq) == EINVAL, "a view of no kind");
	CHECK(gic_nic_qp_local(a->qp, NULL) == EINVAL, "qp_local into NULL");
}

int main(void)
{
	pk_pe a, b;
	gic_conn_info ra, rb;

	if (pk_pair(&a, &b, &ra, &rb, 8)) {
		fprintf(stderr, "test_mlx5_provider: no connected pair on the mlx5 provider: %s "
			"(LD_LIBRARY_PATH=<build>/emu?)\n", gic_nic_error(a.nic));
		return 1;
	}
	printf("mlx5 provider on %s: QPs 0x%x and 0x%x, lid %u/%u, gid %s, max_inline %u\n",
	       ((gic_mlx5 *)a.nic)->name, a.qp->qpn, b.qp->qpn, ra.lid, rb.lid,
	       ra.flags & GIC_CONN_GID_VALID ? "valid" : "none", a.qp->max_inline);
	write_cases(&a, &b, &ra, &rb);
	inline_cases(&a, &b, &rb);
	atomic_cases(&a, &b, &rb);
	argument_cases(&a);
	pk_close(&b);
	pk_close(&a);
	wrap_case();
	view_case();
	error_case();
	printf("test_mlx5_provider: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
