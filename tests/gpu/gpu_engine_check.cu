/*
 * gic-gpu-engine-check: the GPU engine's execution code under tools that
 * serialize kernels (compute-sanitizer). Host threads post through
 * gic/post.h into queues of a GPU-engine softnic in on-demand mode; each
 * softnic_progress() runs the engine kernel alone until the QPs are idle.
 * Covers the warp-parallel batch path, the serial path (multi-BB inline,
 * pointer, atomic, WRITE_IMM) and an error with its flush. Every payload is
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

static void open_fixture(fixture *f)
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

/* A bad rkey: an error CQE with its syndrome, then a flush error. */
static void error_and_flush(fixture *f)
{
	gic_cqe_info c;

	for (int i = 0; i < 2; i++) {
		uint64_t pos = reserve(f, 1);

		gic_wqe_write_inline_u64(&f->sq, pos, (uint64_t)f->dst,
					 softnic_mr_rkey(f->dst_mr) ^ (i ? 0 : 0x4400), 5,
					 GIC_CTRL_CQ_UPDATE);
	}
	gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
	CHECK(poll(f, &f->cq, &c) == 0 && c.cqe_opcode == GIC_CQE_REQ_ERR &&
	      c.syndrome == GIC_SYND_REMOTE_ACCESS_ERR && c.vendor_syndrome == SOFTNIC_VSYND_BAD_RKEY,
	      "error CQE: opcode %u syndrome 0x%x vendor 0x%x", c.cqe_opcode, c.syndrome,
	      c.vendor_syndrome);
	CHECK(poll(f, &f->cq, &c) == 0 && c.syndrome == GIC_SYND_WR_FLUSH_ERR, "flush CQE");
	CHECK(softnic_qp_in_error(f->qp[0]), "QP not in error");
}

int main(void)
{
	fixture f;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	open_fixture(&f);
	batch_writes(&f);
	inline_sizes(&f);
	pointer_writes(&f);
	atomics_and_imm(&f);
	error_and_flush(&f);
	softnic_close(f.nic);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
