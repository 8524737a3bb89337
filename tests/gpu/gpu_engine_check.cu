/*
 * gic-gpu-engine-check: the GPU engine's execution code under tools that
 * serialize kernels (compute-sanitizer). Host threads post through
 * gic/post.h into queues of a GPU-engine softnic in on-demand mode; each
 * softnic_progress() runs the engine kernel alone until the QPs are idle.
 * Covers the warp-parallel batch path, the serial path (multi-BB inline,
 * pointer, atomic, WRITE_IMM) and an error with its flush, on both engine
 * kernels (softnic_gpu_attr.batch_wqes 32 and 64). Every payload is
 * validated; prints "N passed, N failed".
 */
#include "gpu_env.h"

#include "gic/softnic_gpu.h"

static int passed, failed;

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (cond) {                                                         \
			passed++;                                                   \
		} else {                                                            \
			failed++;                                                   \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);             \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
		}                                                                   \
	} while (0)

typedef struct fixture {
	softnic *nic;
	softnic_qp *qp[2];
	softnic_cq *rcq;
	softnic_mr *dst_mr, *src_mr, *res_mr;
	uint8_t *dst, *src, *res; /* device memory */
	gic_sq sq;
	gic_cq cq, rcqv;
} fixture;

/* Polls one CQE, running the engine between polls; 0 or ETIMEDOUT. */
static int poll(fixture *f, gic_cq *cq, gic_cqe_info *c)
{
	uint64_t deadline = gic_now_ns() + 10000000000ull;

	while (gic_cq_poll_one(cq, c, GIC_ORDER_RELEASE_SYS) == EAGAIN) {
		if (gic_now_ns() > deadline)
			return ETIMEDOUT;
		softnic_progress(f->nic);
	}
	return 0;
}

/* batch_wqes: the engine's softnic_gpu_attr.batch_wqes (32 or 64). */
static void open_fixture(fixture *f, int batch_wqes)
{
	softnic_attr na = { 0 };
	softnic_gpu_attr ga = { 0, 2, 2, 0, 1, (size_t)64 << 20 };
	softnic_pd *pd[2];

	memset(f, 0, sizeof(*f));
	CUDA_OK(cudaMalloc(&f->dst, 1 << 20));
	CUDA_OK(cudaMalloc(&f->src, 1 << 20));
	CUDA_OK(cudaMalloc(&f->res, 4096));
	CUDA_OK(cudaMemset(f->dst, 0, 1 << 20));
	na.strict = 1;
	ga.batch_wqes = batch_wqes;
	f->nic = softnic_open_gpu(&na, &ga);
	if (!f->nic)
		exit(1);
	pd[0] = softnic_pd_alloc(f->nic);
	pd[1] = softnic_pd_alloc(f->nic);
	f->rcq = softnic_cq_create(f->nic, 6);
	{
		softnic_qp_attr a = { 10, softnic_cq_create(f->nic, 10), NULL };
		softnic_qp_attr b = { 6, softnic_cq_create(f->nic, 6), f->rcq };

		f->qp[0] = softnic_qp_create(pd[0], &a);
		f->qp[1] = softnic_qp_create(pd[1], &b);
	}
	f->dst_mr = softnic_reg_mr(pd[1], f->dst, 1 << 20,
				   SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC);
	f->src_mr = softnic_reg_mr(pd[0], f->src, 1 << 20, 0);
	f->res_mr = softnic_reg_mr(pd[0], f->res, 4096, SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!f->qp[0] || !f->qp[1] || !f->dst_mr || !f->src_mr || !f->res_mr ||
	    softnic_qp_connect(f->qp[0], f->qp[1])) {
		fprintf(stderr, "setup: %s\n", softnic_last_error(f->nic));
		exit(1);
	}
	softnic_qp_view(f->qp[0], &f->sq, &f->cq);
	softnic_cq_view(f->rcq, &f->rcqv);
}

static uint64_t reserve(fixture *f, uint32_t nbb)
{
	uint64_t pos = 0;

	if (gic_sq_reserve_excl(&f->sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + 1000000000))
		fprintf(stderr, "reserve failed\n");
	return pos;
}

/* 64 single-BB 8-byte writes, one doorbell: the warp-parallel path. */
static void batch_writes(fixture *f)
{
	uint64_t got[64];
	gic_cqe_info c;

	for (int i = 0; i < 64; i++) {
		uint64_t pos = reserve(f, 1);

		gic_wqe_write_inline_u64(&f->sq, pos, (uint64_t)(f->dst + 8 * i),
					 softnic_mr_rkey(f->dst_mr), 0xabc000 + i,
					 i == 63 ? GIC_CTRL_CQ_UPDATE : 0);
	}
	gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
	CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ && c.wqe_counter == 63,
	      "batch CQE: opcode %u counter %u", c.cqe_opcode, c.wqe_counter);
	CUDA_OK(cudaMemcpy(got, f->dst, sizeof(got), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 64; i++)
		CHECK(got[i] == 0xabc000u + i, "batch slot %d: 0x%llx", i, (unsigned long long)got[i]);
}

/* n single-BB 8-byte writes under one doorbell: WQE i writes base + i
 * to 8-byte slot slot_of(i) of dst + off (layout 0: slot i; layout 1: the
 * sets of 32 that a wide batch takes side by side, as one slot per thread
 * and round lays them out: WQE i of each 64 at slot 2 * (i % 32) + i / 32),
 * WQE dup (>= 0) writes WQE dup_of's slot instead of its own, WQE bad_key
 * (>= 0) carries a wrong key, and the WQEs in sig (ending with -1) are
 * signaled. */
typedef struct wide_case {
	int n, off, layout;
	int dup, dup_of;
	int bad_key;
	const int *sig;
} wide_case;

static int wide_slot(const wide_case *w, int i)
{
	if (i == w->dup)
		i = w->dup_of;
	return w->layout ? 64 * (i / 64) + 2 * (i % 32) + (i / 32) % 2 : i;
}

/* Posts the case's writes; returns the first WQE's position. */
static uint64_t post_wide(fixture *f, const wide_case *w, uint64_t base)
{
	uint64_t first = 0;

	for (int i = 0; i < w->n; i++) {
		uint64_t pos = reserve(f, 1);
		int signaled = 0;

		for (const int *s = w->sig; *s >= 0; s++)
			signaled |= *s == i;
		if (i == 0)
			first = pos;
		gic_wqe_write_inline_u64(&f->sq, pos, (uint64_t)(f->dst + w->off + 8 * wide_slot(w, i)),
					 softnic_mr_rkey(f->dst_mr) ^ (i == w->bad_key ? 0x4400 : 0),
					 base + i, signaled ? GIC_CTRL_CQ_UPDATE : 0);
	}
	gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
	return first;
}

/* The wide batch (two or more WQEs per lane: 64 or more at once) and the
 * cases that must leave it for the 32-WQE batch or the serial core: 160
 * and 192 writes in WQE order and 128 side by side, signaled in every set
 * of 32, whose CQEs come in WQE order; a write that writes the slot of the
 * one before it, and one that writes a slot of the first set
 * (interleaved), in batches of 64 and of 96: the later value wins. Every
 * payload checked. */
static void wide_batches(fixture *f)
{
	static const int sig_all[] = { 10, 31, 32, 63, 64, 95, 96, 100, 127, 159, 191, -1 };
	static const int sig_last[] = { 63, -1 };
	static const int sig_96[] = { 95, -1 };
	const wide_case cases[] = {
		{ 160, 400000, 0, -1, -1, -1, sig_all },
		{ 128, 402000, 1, -1, -1, -1, sig_all + 1 },
		{ 64, 404000, 0, 40, 39, -1, sig_last },
		{ 64, 406000, 1, 50, 5, -1, sig_last },
		{ 192, 408000, 0, -1, -1, -1, sig_all },
		{ 96, 410000, 0, 90, 89, -1, sig_96 },
		{ 96, 412000, 1, 70, 5, -1, sig_96 },
	};
	uint64_t got[192];
	gic_cqe_info c;

	for (int k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
		const wide_case *w = &cases[k];
		uint64_t base = 0x5100000ull * (k + 1), first = post_wide(f, w, base);

		for (const int *s = w->sig; *s >= 0 && *s < w->n; s++)
			CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ &&
			      c.wqe_counter == (uint16_t)(first + *s) && c.byte_cnt == 8,
			      "wide case %d: CQE of WQE %d: opcode %u counter %u (want %u)", k, *s,
			      c.cqe_opcode, c.wqe_counter, (unsigned)(uint16_t)(first + *s));
		/* Every slot a layout may use (layout 1 puts the last set of 32 of
		 * a 96 as far as slot 126); the cases lie 250 slots apart. */
		CUDA_OK(cudaMemcpy(got, f->dst + w->off, sizeof(got), cudaMemcpyDeviceToHost));
		for (int i = 0; i < w->n; i++) {
			uint64_t want = base + (i == w->dup_of ? w->dup : i);

			if (i == w->dup)
				continue; /* it wrote dup_of's slot, not its own */
			CHECK(got[wide_slot(w, i)] == want, "wide case %d WQE %d's slot: 0x%llx, want 0x%llx",
			      k, i, (unsigned long long)got[wide_slot(w, i)], (unsigned long long)want);
		}
	}
}

/* Inline writes of 1..200 bytes (up to 4 BBs): the serial path. */
static void inline_sizes(fixture *f)
{
	uint8_t buf[200], got[200];
	gic_cqe_info c;

	for (uint32_t len = 1; len <= 200; len += 13) {
		uint64_t pos;

		for (uint32_t j = 0; j < len; j++)
			buf[j] = (uint8_t)(len * 3 + j) | 1;
		pos = reserve(f, gic_bb_for_ds(gic_ds_inline_write(len)));
		gic_wqe_write_inline(&f->sq, pos, (uint64_t)(f->dst + 4096 + len * 256),
				     softnic_mr_rkey(f->dst_mr), buf, len, GIC_CTRL_CQ_UPDATE);
		gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
		CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ, "inline %u CQE", len);
		CUDA_OK(cudaMemcpy(got, f->dst + 4096 + len * 256, len, cudaMemcpyDeviceToHost));
		CHECK(memcmp(got, buf, len) == 0, "inline payload of %u bytes", len);
	}
}

static void pointer_writes(fixture *f)
{
	static const uint32_t sizes[] = { 1, 100, 4096, 65536 };
	uint8_t *pat = (uint8_t *)malloc(65536), *got = (uint8_t *)malloc(65536);
	gic_cqe_info c;

	for (int i = 0; i < 65536; i++)
		pat[i] = (uint8_t)(i * 7 + 1);
	CUDA_OK(cudaMemcpy(f->src, pat, 65536, cudaMemcpyHostToDevice));
	for (int k = 0; k < 4; k++) {
		uint64_t pos = reserve(f, 1);

		gic_wqe_write(&f->sq, pos, GIC_OPCODE_RDMA_WRITE, (uint64_t)(f->dst + 131072),
			      softnic_mr_rkey(f->dst_mr), (uint64_t)f->src, softnic_mr_lkey(f->src_mr),
			      sizes[k], GIC_CTRL_CQ_UPDATE, 0);
		gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
		CHECK(poll(f, &f->cq, &c) == 0 && c.byte_cnt == sizes[k], "pointer %u CQE", sizes[k]);
		CUDA_OK(cudaMemcpy(got, f->dst + 131072, sizes[k], cudaMemcpyDeviceToHost));
		CHECK(memcmp(got, pat, sizes[k]) == 0, "pointer payload of %u bytes", sizes[k]);
	}
	free(pat);
	free(got);
}

static void atomics_and_imm(fixture *f)
{
	uint64_t counter = 0, fetched[10];
	gic_cqe_info c;

	for (int i = 0; i < 10; i++) {
		uint64_t pos = reserve(f, 1);

		gic_wqe_atomic_fa(&f->sq, pos, (uint64_t)(f->dst + 262144), softnic_mr_rkey(f->dst_mr),
				  1, (uint64_t)(f->res + 8 * i), softnic_mr_lkey(f->res_mr),
				  i == 9 ? GIC_CTRL_CQ_UPDATE : 0);
	}
	gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
	CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ, "atomic CQE");
	CUDA_OK(cudaMemcpy(&counter, f->dst + 262144, 8, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(fetched, f->res, sizeof(fetched), cudaMemcpyDeviceToHost));
	CHECK(counter == 10, "atomic counter %llu", (unsigned long long)counter);
	for (int i = 0; i < 10; i++)
		CHECK(fetched[i] == (uint64_t)i, "atomic %d fetched %llu", i,
		      (unsigned long long)fetched[i]);
	{
		uint64_t pos = reserve(f, 1);

		gic_wqe_write(&f->sq, pos, GIC_OPCODE_RDMA_WRITE_IMM, (uint64_t)(f->dst + 300000),
			      softnic_mr_rkey(f->dst_mr), (uint64_t)f->src, softnic_mr_lkey(f->src_mr),
			      64, 0, gic_htobe32(0x77));
		gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
		CHECK(poll(f, &f->rcqv, &c) == 0 && c.cqe_opcode == GIC_CQE_RESP_WR_IMM &&
		      gic_be32toh(c.imm) == 0x77 && c.byte_cnt == 64, "WRITE_IMM receive CQE");
	}
}

/* A bad rkey at WQE 45 of 64 under one doorbell (inside a wide batch):
 * WQEs 0-44 land and complete, 45 gets an error CQE with its syndrome, 46
 * a flush error, and nothing of 45-63 is written. */
static void error_and_flush(fixture *f)
{
	static const int sig[] = { 44, -1 };
	const wide_case w = { 64, 420000, 0, -1, -1, 45, sig };
	uint64_t got[64], base = 0x7700000ull, first = post_wide(f, &w, base);
	gic_cqe_info c;

	CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ &&
	      c.wqe_counter == (uint16_t)(first + 44), "CQE before the error: opcode %u counter %u",
	      c.cqe_opcode, c.wqe_counter);
	CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ_ERR &&
	      c.syndrome == GIC_SYND_REMOTE_ACCESS_ERR && c.vendor_syndrome == SOFTNIC_VSYND_BAD_RKEY &&
	      c.wqe_counter == (uint16_t)(first + 45),
	      "error CQE: opcode %u syndrome 0x%x vendor 0x%x counter %u", c.cqe_opcode, c.syndrome,
	      c.vendor_syndrome, c.wqe_counter);
	CHECK(poll(f, &f->cq, &c) == 0 && c.syndrome == GIC_SYND_WR_FLUSH_ERR &&
	      c.wqe_counter == (uint16_t)(first + 46), "flush CQE: syndrome 0x%x counter %u",
	      c.syndrome, c.wqe_counter);
	CHECK(softnic_qp_in_error(f->qp[0]), "QP not in error");
	CUDA_OK(cudaMemcpy(got, f->dst + w.off, sizeof(got), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 64; i++)
		CHECK(got[i] == (i < 45 ? base + i : 0), "error case slot %d: 0x%llx", i,
		      (unsigned long long)got[i]);
}

/* gic-gpu-engine-check [32|64|96]: every case on the three engine kernels,
 * or on the one whose softnic_gpu_attr.batch_wqes is given (the sanitizers'
 * runs, scripts/gpu-test.sh, which take about a second per kernel launch). */
int main(int argc, char **argv)
{
	int only = argc > 1 ? atoi(argv[1]) : 0;
	fixture f;

	if (argc > 2 || (argc > 1 && only != 32 && only != 64 && only != 96)) {
		fprintf(stderr, "usage: gic-gpu-engine-check [32|64|96]\n");
		return 2;
	}

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	/* Every case on the engine kernels: one WQE per lane, two and three
	 * (batches of 64 and 96, where the architecture's kernel takes them). */
	for (int batch = 32; batch <= 96; batch += 32) {
		if (only && batch != only)
			continue;
		open_fixture(&f, batch);
		printf("engine batch %d: the engine runs %d\n", batch, softnic_gpu_batch_wqes(f.nic));
		batch_writes(&f);
		wide_batches(&f);
		inline_sizes(&f);
		pointer_writes(&f);
		atomics_and_imm(&f);
		error_and_flush(&f);
		softnic_close(f.nic);
		cudaFree(f.dst);
		cudaFree(f.src);
		cudaFree(f.res);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
