/*
 * Diagnostic (not for use): one QP's drain on softnic's persistent GPU
 * engine (GPU scope, as `gic rate` runs it; B one-warp blocks), the engine
 * alone: one GPU thread fills the 2^14-BB ring with N one-BB 8-byte
 * inline writes (every 32nd signaled) without ringing, then takes the
 * time, rings once, waits for the last CQE (gic_sq_quiet) and takes the
 * time again. With "conc", one warp posts as `gic rate --row t32-q1-warp`
 * does instead (gic_sq_warp_write_inline, 32 WQEs and one doorbell per
 * round, the last signaled, thread-major slots) while the engine drains,
 * timed from its first post to its last CQE (gic_sq_wait_retired). Checks
 * every payload; prints the engine's counters of each round. "conc-wide":
 * the same poster with the quiet that loads 8 CQE tails per trip
 * (gic_sq_quiet_wide).
 * usage: [DRAIN_BATCH=32|64] drain_slots ROUNDS [BLOCKS [MODE]]
 * (DRAIN_BATCH: softnic_gpu_attr.batch_wqes, added in the sixteenth session)
 *
 * drain_slots (seventeenth session) is drain_alone with the payload slots
 * as a choice, to tell the poster's concurrency from the address pattern:
 * the prefilled ring's WQEs write contiguous 8-byte slots (WQE i to slot
 * i: a batch of 32 stores to 4 lines), the rate row's poster thread-major
 * ones (lane t's round r to slot t * N/32 + r: 32 lines 4 KiB apart).
 * MODE: alone (contiguous), alone-tm (prefilled, thread-major slots, the
 * rate row's), conc-wide (the rate row's poster and wide quiet,
 * thread-major), conc-wide-cm (the same poster, contiguous slots: round r's
 * lane t to slot 32 r + t).
 * alone-noise-fence / alone-noise-store: the prefilled ring drained while
 * one warp of another kernel writes as the poster does, to memory nobody
 * reads (32 lanes x 64 bytes a round, then lane 0's fence.acq_rel.gpu and
 * two word stores; -store: without the fence), until the drain ends.
 * alone-noise-ring: the same writer (with its fence) into the ring's
 * part that no WQE of the round holds (build with -DDRAIN_N=8160: half the
 * ring).
 * alone-warpfill: the ring filled by one warp as the rate row's poster
 * writes it (fill_warp), then drained.
 * alone-noise-db: a writer that stores the QP's doorbell record and
 * doorbell word again with the values they hold (no new work).
 * conc-wide-lead (eighteenth session): conc-wide whose first DRAIN_LEAD
 * rounds are rung once, after the last of them (post_warp).
 * alone-ringpace (eighteenth session): the ring filled as alone-warpfill,
 * then rung round by round every DRAIN_PACE_NS (default 1115, the
 * poster's pace) with its doorbell sequence (ring_paced); with
 * DRAIN_RING_EVERY=K, only every K-th round rings (and the last).
 * With GIC_SOFTNIC_GPU_TRACE=N (records per engine warp, read at open) and
 * DRAIN_TRACE_OUT=FILE, the engine's trace records of every round go to
 * FILE as CSV (ns,clk,warp,step,wqe_index,count) after the last round.
 *
 * drain_watch (2026-12-04, nineteenth session's results): drain_slots with
 * a CQ watcher, a one-thread kernel on a stream of its own that loads each
 * of the round's N / 32 CQEs in turn (relaxed loads, never consuming one)
 * and stamps when the engine wrote it; each round then also prints when
 * the engine wrote its first, 11th, 501st and last CQE, from the timed
 * kernel's start (t0), beside the round's end (its quiet's), so that the
 * engine's time and the poster's quiet after it are told apart.
 * conc-warp: conc-wide's poster with the whole warp's quiet
 * (gic_sq_quiet_warp). DRAIN_NO_STATS=1: the host never reads the
 * engine's counters (softnic_get_stats), which lived in managed memory.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/post.h"
#include "gic/softnic_gpu.h"

#define CK(call)                                                                     \
	do {                                                                         \
		cudaError_t e_ = (call);                                             \
		if (e_ != cudaSuccess) {                                             \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,            \
				cudaGetErrorString(e_));                             \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#ifndef DRAIN_N
#define DRAIN_N 16352 /* WQEs per round; built with -DDRAIN_N=8160 for alone-noise-ring */
#endif
enum { LOG_BB = 14, N = DRAIN_N, SIG = 32, FREE_BB = ((1 << LOG_BB) - N) & ~31 };

/* The timed kernel's start (post_warp, ring_paced, drain), on the clock
 * the watcher stamps with (%globaltimer, the same on every SM). */
__device__ uint64_t g_t0;

/* Stamps seen[k] when CQE ci0 + k (ci0: the CQ's consumer index at the
 * watcher's start, before the round's poster takes any) is written, for
 * k < n, in order; 0 from the first one not written within 50 ms. */
__global__ void watch_cq(const gic_cq *cq, uint64_t *seen, int n)
{
	gic_cq c = *cq;
	uint64_t deadline = gic_now_ns() + 50000000ull;

	for (int k = 0; k < n; k++) {
		uint32_t ci = c.ci + (uint32_t)k;
		const uint64_t *tail = (const uint64_t *)((const uint8_t *)&c.cqes[ci & (c.cqe_cnt - 1)] +
							  GIC_CQE_TAIL_OFFSET);

		while (!gic_cqe_sw_owned(gic_ld_relaxed_sys_u64(tail), ci, c.cqe_cnt))
			if (gic_now_ns() > deadline) {
				for (; k < n; k++)
					seen[k] = 0;
				return;
			}
		seen[k] = gic_now_ns();
	}
}

/* The payload slot of the WQE of round r, lane t (the ring's WQE 32 r + t). */
static __host__ __device__ uint64_t slot_of(int r, int t, int thread_major)
{
	return thread_major ? (uint64_t)t * (N / 32) + r : (uint64_t)r * 32 + t;
}

__global__ void fill(gic_sq *sq, uint64_t *dst, uint32_t rkey, uint64_t tag, int *err, int tm)
{
	gic_sq s = *sq;

	for (int i = 0; i < N; i++) {
		uint64_t pos, slot = slot_of(i / 32, i % 32, tm);

		if (gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull)) {
			*err = 1;
			return;
		}
		gic_wqe_write_inline_u64(&s, pos, (uint64_t)(dst + slot), rkey, tag + slot,
					 i % SIG == SIG - 1 ? GIC_CTRL_CQ_UPDATE : 0);
		if (i % SIG == SIG - 1)
			gic_sq_note_signaled(&s, pos + 1, 0);
	}
	*sq = s;
}

/* alone-warpfill: the ring filled as the rate row's poster writes it (32
 * lanes, lane t building the WQE of round r at 32 r + t with
 * gic_wqe_write_inline, thread-major slots, the last lane's signaled), but
 * nothing is rung; the drain then rings once. */
__global__ void fill_warp(gic_sq *sq, uint64_t *dst, uint32_t rkey, uint64_t tag)
{
	int t = threadIdx.x;
	gic_sq s = *sq; /* every lane: the constants and resv */
	uint64_t start = s.resv;

	for (int r = 0; r < N / 32; r++) {
		uint64_t slot = slot_of(r, t, 1), v = tag + slot;

		gic_wqe_write_inline(&s, start + (uint64_t)r * 32 + t, (uint64_t)(dst + slot), rkey, &v, 8,
				     t == 31 ? GIC_CTRL_CQ_UPDATE : 0);
	}
	__syncwarp();
	if (t == 0) {
		s.resv = start + N;
		s.signaled = start + N;
		*sq = s;
	}
}

/* The noise writer (MODE alone-noise-*): rounds as the poster's until
 * *done (or 100 ms); the rounds it made in *rounds. */
__global__ void noise(uint8_t *scratch, const volatile int *done, int fence, uint64_t *rounds,
		      const gic_sq *sq, int ring, int db)
{
	int t = threadIdx.x;
	uint64_t n = 0, deadline = gic_now_ns() + 100000000ull;
	/* ring: the BBs past this round's WQEs (FREE_BB of them) */
	uint64_t first = sq->ready + N;
	uint32_t rec0 = gic_ld_relaxed_sys_u32(sq->dbrec);

	/* db: starts once the drain has rung (its one doorbell), so that
	 * every store writes back the round's final values. */
	while (db && gic_ld_relaxed_sys_u32(sq->dbrec) == rec0 && !*done && gic_now_ns() < deadline)
		;

	while (!*done && gic_now_ns() < deadline) {
		uint64_t k = (n * 32 + (uint64_t)t) % (ring ? FREE_BB : 16384);
		uint4 *line = (uint4 *)(ring ? sq->wqes + ((first + k) & ((1 << LOG_BB) - 1)) * 64
					     : scratch + k * 64);

		if (db) {
			if (t == 0) {
				gic_st_relaxed_sys_u32(sq->dbrec, gic_ld_relaxed_sys_u32(sq->dbrec));
				gic_st_relaxed_sys_u64(sq->db, gic_ld_relaxed_sys_u64(sq->db));
			}
			n++;
			continue;
		}
		uint4 v = make_uint4((unsigned)n, (unsigned)t, 1, 2);

		for (int k = 0; k < 4; k++)
			line[k] = v;
		__syncwarp();
		if (t == 0) {
			if (fence)
				gic_fence_acq_rel_gpu(); /* as the ring's fence orders the WQEs */
			gic_st_relaxed_sys_u32((uint32_t *)(scratch + (1u << 20)), (uint32_t)n);
			gic_st_relaxed_sys_u64((uint64_t *)(scratch + (1u << 20) + 64), n);
		}
		n++;
	}
	if (t == 0)
		*rounds = n;
}

/* alone-ringpace (eighteenth session): the prefilled ring rung round by
 * round at the poster's pace (one round of 32 WQEs per pace_ns) with the
 * poster's doorbell sequence (gic_sq_ring at fence-gpu, then ready's
 * release), no WQE written meanwhile; then the wide quiet, as post_warp. */
__global__ void ring_paced(gic_sq *sq, int *err, uint64_t *ns, uint64_t pace_ns, int every)
{
	gic_sq s = *sq;
	uint64_t t0 = gic_now_ns(), start = s.ready;
	int rc;

	g_t0 = t0;

	for (int r = 0; r < N / 32; r++) {
		uint64_t end = start + 32ull * (r + 1);

		while (gic_now_ns() < t0 + pace_ns * (uint64_t)r) /* ends by itself */
			;
		if ((r + 1) % every && r + 1 < N / 32)
			continue; /* DRAIN_RING_EVERY: rings every that many rounds, and the last */
		gic_sq_ring(&s, end, GIC_ORDER_FENCE_GPU);
		gic_st_release_gpu_u64(&sq->ready, end);
	}
	rc = gic_sq_quiet_wide(sq, start + N, 1, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	*ns = gic_now_ns() - t0;
	if (rc)
		*err = 3000 + rc;
}

__global__ void drain(gic_sq *sq, int *err, uint64_t *ns, int *done)
{
	gic_sq s = *sq;
	uint64_t t0 = gic_now_ns();
	int rc;

	g_t0 = t0;
	gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
	rc = gic_sq_quiet(&s, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	*ns = gic_now_ns() - t0;
	if (rc)
		*err = 1000 + rc;
	*sq = s;
	gic_st_release_sys_u32((uint32_t *)done, 1); /* ends the noise writer */
}

/* The rate row's poster: one warp, N / 32 rounds. lead > 0 (conc-wide-lead,
 * eighteenth session): its first lead rounds are written as the others
 * but rung once, after the last of them, so that the engine starts lead
 * rounds behind the poster and never reads a WQE written less than that
 * long ago (the poster stays ahead: it posts faster than the engine
 * drains). */
__global__ void post_warp(gic_sq *sq, uint64_t *dst, uint32_t rkey, uint64_t tag, int *err,
			  uint64_t *ns, int wide, int tm, uint64_t *stamps, int lead)
{
	int t = threadIdx.x, per = N / 32, rc = 0, i = 0;
	uint64_t t0 = gic_now_ns();
	gic_sq_warp w;

	if (t == 0)
		g_t0 = t0;

	gic_sq_warp_begin(&w, sq);
	if (lead > 0) {
		uint64_t start = 0;

		if (t == 0)
			start = gic_atomic_add_relaxed_gpu_u64(&sq->resv, 32ull * lead);
		start = __shfl_sync(0xffffffffu, start, 0);
		for (; i < lead; i++) {
			uint64_t slot = slot_of(i, t, tm), v = tag + slot, end = start + 32ull * (i + 1);

			gic_wqe_write_inline(&w.consts, end - 32 + t, (uint64_t)(dst + slot), rkey, &v, 8,
					     t == 31 ? GIC_CTRL_CQ_UPDATE : 0);
			if (t == 31)
				gic_sq_note_signaled(sq, end, 1);
			if (t == 0)
				stamps[i] = gic_now_ns();
		}
		/* Orders every lane's WQE stores before lane 0's doorbell sequence. */
		__syncwarp();
		if (t == 0) {
			gic_sq_ring(&w.consts, start + 32ull * lead, GIC_ORDER_FENCE_GPU);
			gic_st_release_gpu_u64(&sq->ready, start + 32ull * lead);
			w.own_end = start + 32ull * lead;
		}
	}
	for (; i < per && !rc; i++) {
		uint64_t slot = slot_of(i, t, tm), v = tag + slot;

		rc = gic_sq_warp_write_inline(&w, (uint64_t)(dst + slot), rkey, &v, 8, 1,
					      GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
		if (t == 0)
			stamps[i] = gic_now_ns(); /* round i posted */
	}
	if (!rc && wide == 2) /* conc-warp: the whole warp quiets (rc is the same in every lane) */
		rc = gic_sq_quiet_warp(sq, __shfl_sync(0xffffffffu, t ? 0 : gic_ld_acquire_gpu_u64(&sq->ready), 0),
				       1, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	else if (!rc && t == 0 && wide)
		rc = gic_sq_quiet_wide(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1,
				       GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	else if (!rc && t == 0)
		rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1,
					 GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	if (t == 0) {
		*ns = gic_now_ns() - t0;
		if (rc)
			*err = 2000 + rc;
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4, *err;
	int blocks = argc > 2 ? atoi(argv[2]) : 64;
	const char *mode = argc > 3 ? argv[3] : "alone";
	int conc = !strncmp(mode, "conc", 4);
	int wide = !strncmp(mode, "conc-wide", 9) ? 1 : !strcmp(mode, "conc-warp") ? 2 : 0;
	int tm = !strcmp(mode, "alone-tm") || !strcmp(mode, "conc") || !strncmp(mode, "conc-wide", 9);
	int lead = !strcmp(mode, "conc-wide-lead") && getenv("DRAIN_LEAD") ? atoi(getenv("DRAIN_LEAD")) : 0;
	int noisy = !strncmp(mode, "alone-noise", 11);
	int noise_ring = !strcmp(mode, "alone-noise-ring"), noise_db = !strcmp(mode, "alone-noise-db");
	int noise_fence = !strcmp(mode, "alone-noise-fence") || noise_ring;
	int ringpace = !strcmp(mode, "alone-ringpace");
	int nostats = getenv("DRAIN_NO_STATS") != NULL; /* the engine's counters never read (they print 0) */
	int warpfill = !strcmp(mode, "alone-warpfill") || ringpace;

	int *done;
	uint8_t *scratch;
	uint64_t *noise_rounds, hrounds = 0;
	cudaStream_t st2;
	softnic_stats s0 = { 0 }, s1 = { 0 };
	uint64_t *ns, *stamps, *hstamps;
	softnic_attr na = { 0 };
	softnic_gpu_attr ga = { 0, blocks, 1, 0, 0, (size_t)256 << 20 };
	softnic *nic;
	softnic_pd *pd[2];
	softnic_qp *qp[2];
	softnic_mr *mr;
	uint64_t *dst, *host = (uint64_t *)malloc(N * 8);
	gic_sq sqv, *d_sq;
	gic_cq cqv, *d_cq;
	cudaStream_t st, st3;
	uint64_t *seen, hseen[N / 32];

	if (noise_ring && N > (1 << LOG_BB) / 2) {
		fprintf(stderr, "alone-noise-ring needs half the ring free: build with -DDRAIN_N=8160\n");
		return 2;
	}
	CK(cudaMalloc(&dst, N * 8));
	CK(cudaMallocManaged(&err, sizeof(int)));
	CK(cudaMallocManaged(&ns, sizeof(*ns)));
	/* Device memory: a managed page the host read last round would fault
	 * on the device's first store and stall the poster (call 5 of the
	 * seventeenth session measured that fault, not the poster). */
	CK(cudaMalloc(&stamps, sizeof(*stamps) * (N / 32)));
	hstamps = (uint64_t *)malloc(sizeof(*stamps) * (N / 32));
	*err = 0;
	ga.batch_wqes = getenv("DRAIN_BATCH") ? atoi(getenv("DRAIN_BATCH")) : 0; /* 32 or 64 */
	nic = softnic_open_gpu(&na, &ga);
	if (!nic)
		return 1;
	pd[0] = softnic_pd_alloc(nic);
	pd[1] = softnic_pd_alloc(nic);
	{
		softnic_qp_attr a = { LOG_BB, softnic_cq_create(nic, 12), NULL };
		softnic_qp_attr b = { 6, softnic_cq_create(nic, 6), softnic_cq_create(nic, 6) };

		qp[0] = softnic_qp_create(pd[0], &a);
		qp[1] = softnic_qp_create(pd[1], &b);
	}
	mr = softnic_reg_mr(pd[1], dst, N * 8, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (!qp[0] || !qp[1] || !mr || softnic_qp_connect(qp[0], qp[1])) {
		fprintf(stderr, "setup: %s\n", softnic_last_error(nic));
		return 1;
	}
	softnic_qp_view(qp[0], &sqv, &cqv);
	CK(cudaMalloc(&d_sq, sizeof(*d_sq)));
	CK(cudaMalloc(&d_cq, sizeof(*d_cq)));
	CK(cudaMemcpy(d_cq, &cqv, sizeof(cqv), cudaMemcpyHostToDevice));
	sqv.cq = d_cq; /* the device copy of the CQ view */
	CK(cudaMemcpy(d_sq, &sqv, sizeof(sqv), cudaMemcpyHostToDevice));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&st3, cudaStreamNonBlocking));
	CK(cudaMalloc(&seen, sizeof(hseen)));
	CK(cudaMalloc(&done, sizeof(int)));
	CK(cudaMalloc(&scratch, (2u << 20)));
	CK(cudaMalloc(&noise_rounds, sizeof(uint64_t)));
	for (int r = 0; r < rounds; r++) {
		uint64_t tag = (uint64_t)(r + 1) << 32;
		int bad = 0;

		if (!nostats)
			softnic_get_stats(nic, &s0);
		watch_cq<<<1, 1, 0, st3>>>(d_cq, seen, N / 32);
		if (conc) {
			post_warp<<<1, 32, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag, err, ns, wide, tm,
						    stamps, lead);
		} else {
			if (warpfill)
				fill_warp<<<1, 32, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag);
			else
				fill<<<1, 1, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag, err, tm);
			CK(cudaStreamSynchronize(st));
			CK(cudaMemset(done, 0, sizeof(int)));
			if (noisy)
				noise<<<1, 32, 0, st2>>>(scratch, done, noise_fence, noise_rounds, d_sq,
							  noise_ring, noise_db);
			if (ringpace) /* resv, signaled from the fill; ready and the record move */
				ring_paced<<<1, 1, 0, st>>>(d_sq, err, ns,
							    getenv("DRAIN_PACE_NS") ? atoll(getenv("DRAIN_PACE_NS")) : 1115,
							    getenv("DRAIN_RING_EVERY") ? atoi(getenv("DRAIN_RING_EVERY")) : 1);
			else
				drain<<<1, 1, 0, st>>>(d_sq, err, ns, done);
			CK(cudaStreamSynchronize(st2));
			if (noisy)
				CK(cudaMemcpy(&hrounds, noise_rounds, sizeof(hrounds), cudaMemcpyDeviceToHost));
		}
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(host, dst, N * 8, cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			bad += host[i] != tag + (uint64_t)i;
		if (!nostats)
			softnic_get_stats(nic, &s1);
		printf("%s round %d: %s %.1f us (%.2f M msg/s), err %d, bad payloads %d; wqes %llu "
		       "cqes %llu cq_full_stalls %llu doorbell_watches %llu\n",
		       mode, r, conc ? "first post to last CQE" : "ring to last CQE", *ns / 1e3,
		       N / (*ns / 1e3), *err, bad,
		       (unsigned long long)(s1.wqes_executed - s0.wqes_executed),
		       (unsigned long long)(s1.cqes_written - s0.cqes_written),
		       (unsigned long long)(s1.cq_full_stalls - s0.cq_full_stalls),
		       (unsigned long long)(s1.doorbell_watches - s0.doorbell_watches));
		{
			uint64_t t0;

			CK(cudaStreamSynchronize(st3));
			CK(cudaMemcpy(hseen, seen, sizeof(hseen), cudaMemcpyDeviceToHost));
			CK(cudaMemcpyFromSymbol(&t0, g_t0, sizeof(t0)));
			printf("  engine: CQE 1 %.1f, 11 %.1f, 501 %.1f, last %.1f us; between 11 and 501 "
			       "%.2f M msg/s; round end %.1f us\n",
			       (hseen[0] - (double)t0) / 1e3, (hseen[10] - (double)t0) / 1e3,
			       (hseen[500] - (double)t0) / 1e3, (hseen[N / 32 - 1] - (double)t0) / 1e3,
			       490.0 * 32 / ((hseen[500] - (double)hseen[10]) / 1e3), *ns / 1e3);
		}
		if (noisy)
			printf("  noise: %llu rounds (%.1f per us of the drain)\n", (unsigned long long)hrounds,
			       hrounds / (*ns / 1e3));
		if (conc) { /* the poster's rounds: the longest gap between two, and gaps over 5 us */
			uint64_t worst = 0, over = 0;
			int at = 0;

			CK(cudaMemcpy(hstamps, stamps, sizeof(*stamps) * (N / 32),
				      cudaMemcpyDeviceToHost));
			for (int i = 1; i < N / 32; i++) {
				uint64_t g = hstamps[i] - hstamps[i - 1];

				if (g > worst)
					worst = g, at = i;
				if (g > 5000)
					over += g;
			}
			printf("  poster: posted in %.1f us; longest gap %.1f us before round %d; gaps over 5 us: %.1f us\n",
			       (hstamps[N / 32 - 1] - hstamps[0]) / 1e3, worst / 1e3, at, over / 1e3);
			if (lead > 0) { /* the engine's time: from the one ring of the lead rounds */
				double from = (*ns - (double)(hstamps[lead - 1] - hstamps[0])) / 1e3;

				printf("  lead %d rounds rung at +%.1f us; from there to the last CQE %.1f us (%.2f M msg/s)\n",
				       lead, (hstamps[lead - 1] - hstamps[0]) / 1e3, from, N / from);
			}
		}
		if (*err || bad)
			return 1;
	}
	if (getenv("DRAIN_TRACE_OUT")) {
		size_t max = 1u << 18, got = 0;
		softnic_gpu_trace_rec *recs = (softnic_gpu_trace_rec *)calloc(max, sizeof(*recs));
		FILE *f = fopen(getenv("DRAIN_TRACE_OUT"), "w");

		if (!recs || !f || softnic_gpu_trace_read(nic, recs, max, &got)) {
			fprintf(stderr, "trace: could not read or write\n");
			return 1;
		}
		fprintf(f, "ns,clk,warp,step,wqe_index,count\n");
		for (size_t i = 0; i < got; i++)
			if (recs[i].step)
				fprintf(f, "%llu,%llu,%u,%u,%u,%u\n", (unsigned long long)recs[i].ns,
					(unsigned long long)recs[i].clk, recs[i].warp, recs[i].step,
					recs[i].wqe_index, recs[i].count);
		fclose(f);
		printf("trace: %zu records\n", got);
	}
	softnic_close(nic);
	return 0;
}
