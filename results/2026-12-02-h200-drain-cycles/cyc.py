# Diagnostic engine (not for use): lane 0 of each warp sums clock64()
# deltas per region of its service loop in shared memory and prints them
# when the kernel ends. usage: cyc.py IN.cu OUT.cu
import sys
s = open(sys.argv[1]).read()
def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (s.count(old), old)
    s = s.replace(old, new)
rep('static __shared__ job_own job_owns[32];', '''static __shared__ job_own job_owns[32];
enum { R_TAIL, R_SCAN_IDLE, R_SCAN_BUSY, R_BEGIN, R_VIEW, R_BETWEEN, R_BB, R_DECODE, R_OVERLAP,
       R_CLAIM, R_MOVE, R_CQE, R_LOOPEXIT, R_END, NCYC };
enum { C_PASS, C_BATCH, C_WQE, C_IDLE, C_BUSY, C_SHORT_IDLE_CYC, C_SHORT_IDLE_N, C_BUSY_MAX, C_IDLE_START, C_T0_NS, C_T0_CYC, NCNT };
static __shared__ unsigned long long cyc_sum[32][NCYC], cyc_cnt[32][NCNT], cyc_last[32];
enum { NPER = 12 };
static __shared__ unsigned long long per_t0[NPER], per_t1[NPER], per_b[NPER], per_last_batch_ns;
static __shared__ int per_n;
static __device__ __forceinline__ unsigned long long gtimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
static __device__ __forceinline__ void per_batch(void)
{
	unsigned long long t = gtimer();
	if (threadIdx.x >> 5)
		return; /* warp 0 of the block only */
	if (per_n == 0 || t - per_last_batch_ns > 20000) {
		if (per_n < NPER) { per_t0[per_n] = t; per_b[per_n] = 0; }
		per_n++;
	}
	if (per_n <= NPER) { per_t1[per_n - 1] = t; per_b[per_n - 1]++; }
	per_last_batch_ns = t;
}
static __device__ __forceinline__ void cyc(int r)
{
	unsigned long long t = clock64();
	int w = threadIdx.x >> 5;
	cyc_sum[w][r] += t - cyc_last[w];
	cyc_last[w] = t;
}
static __device__ __forceinline__ void cyc_n(int c, unsigned long long n)
{
	cyc_cnt[threadIdx.x >> 5][c] += n;
}''')
# warp_batch regions
rep('''	if ((uintptr_t)sq & 15)
		return 0; /* a caller ring the 16-byte loads cannot read */''', '''	if (lane == 0)
		cyc(R_BETWEEN);
	if ((uintptr_t)sq & 15)
		return 0; /* a caller ring the 16-byte loads cannot read */''')
rep('''	nbb = __shfl_sync(FULL_WARP, lane ? 1 : gic_wqe_bb_count(b[1]), 0);
''', '''	nbb = __shfl_sync(FULL_WARP, lane ? 1 : gic_wqe_bb_count(b[1]), 0);
	if (lane == 0)
		cyc(R_BB);
''')
rep('''		lo = (uint64_t)lw.dst;
		hi = ok && lw.dst ? lo + lw.total_len : lo;
	}
''', '''		lo = (uint64_t)lw.dst;
		hi = ok && lw.dst ? lo + lw.total_len : lo;
	}
	if (lane == 0)
		cyc(R_DECODE);
''')
rep('''	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_KEY_OK, cons, (uint32_t)n);''', '''	if (lane == 0)
		cyc(R_OVERLAP);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_KEY_OK, cons, (uint32_t)n);''')
rep('''	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_CQ_CLAIMED, cons, (uint32_t)n);''', '''	if (lane == 0)
		cyc(R_CLAIM);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_CQ_CLAIMED, cons, (uint32_t)n);''')
rep('''	__syncwarp(FULL_WARP);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, (uint32_t)n);''', '''	__syncwarp(FULL_WARP);
	if (lane == 0)
		cyc(R_MOVE);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, (uint32_t)n);''')
rep('''	batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw, sigmask, cons, nbb, lane);
	if (lane == 0) {''', '''	batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw, sigmask, cons, nbb, lane);
	if (lane == 0) {
		cyc(R_CQE);
		cyc_n(C_BATCH, 1);
		per_batch();
		cyc_n(C_WQE, (unsigned long long)n);''')
# warp_progress
rep('''	if (!__shfl_sync(FULL_WARP, active, 0))
		return 0;''', '''	if (lane == 0)
		cyc(R_BEGIN);
	if (!__shfl_sync(FULL_WARP, active, 0))
		return 0;
	if (lane == 0)
		cyc_n(C_PASS, 1);''')
rep('''	healthy = __shfl_sync(FULL_WARP, !v.in_error && !v.pending_synd, 0);
	/* pre (lane 0)''', '''	healthy = __shfl_sync(FULL_WARP, !v.in_error && !v.pending_synd, 0);
	if (lane == 0)
		cyc(R_VIEW);
	/* pre (lane 0)''')
rep('''	if (lane == 0) {
		warp_end(p, pk, qp, st, &v, fresh);''', '''	if (lane == 0)
		cyc(R_LOOPEXIT);
	if (lane == 0) {
		warp_end(p, pk, qp, st, &v, fresh);''')
rep('''		trace_flush(kc, tr, v.qpn);
	}
	return done;''', '''		trace_flush(kc, tr, v.qpn);
		cyc(R_END);
	}
	return done;''')
# scan
rep('''	unsigned todo = __ballot_sync(FULL_WARP, busy);
	int done = 0;
''', '''	unsigned todo = __ballot_sync(FULL_WARP, busy);
	int done = 0;

	if (lane == 0) {
		unsigned long long *k = cyc_cnt[threadIdx.x >> 5], t0 = cyc_last[threadIdx.x >> 5];

		cyc(todo ? R_SCAN_BUSY : R_SCAN_IDLE);
		cyc_n(todo ? C_BUSY : C_IDLE, 1);
		/* idle streaks shorter than 50 us (inside a timed round) */
		if (!todo) {
			if (!k[C_IDLE_START])
				k[C_IDLE_START] = t0;
		} else {
			if (k[C_IDLE_START] && t0 - k[C_IDLE_START] < 99000) {
				k[C_SHORT_IDLE_CYC] += t0 - k[C_IDLE_START];
				k[C_SHORT_IDLE_N]++;
			}
			k[C_IDLE_START] = 0;
			if (cyc_last[threadIdx.x >> 5] - t0 > k[C_BUSY_MAX])
				k[C_BUSY_MAX] = cyc_last[threadIdx.x >> 5] - t0;
		}
	}
''')
rep('''		job_own_init(job_mine(), jobs, warp);''', '''		job_own_init(job_mine(), jobs, warp);
		for (int r = 0; r < NCYC; r++)
			cyc_sum[threadIdx.x >> 5][r] = 0;
		for (int r = 0; r < NCNT; r++)
			cyc_cnt[threadIdx.x >> 5][r] = 0;
		cyc_last[threadIdx.x >> 5] = clock64();
		if (!(threadIdx.x >> 5)) per_n = 0;
		cyc_cnt[threadIdx.x >> 5][C_T0_CYC] = cyc_last[threadIdx.x >> 5];
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(cyc_cnt[threadIdx.x >> 5][C_T0_NS]));''')
rep('''	for (;;) {
		/* Every lane loads stop''', '''	for (;;) {
		if (lane == 0)
			cyc(R_TAIL);
		/* Every lane loads stop''')
rep('''		park_release(pk); /* stop, or the on-demand run's end */''', '''		park_release(pk); /* stop, or the on-demand run's end */
	if (lane == 0 && cyc_cnt[threadIdx.x >> 5][C_BATCH]) {
		unsigned long long *c = cyc_sum[threadIdx.x >> 5], *k = cyc_cnt[threadIdx.x >> 5], ns;

		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
		for (int i = 0; i < per_n && i < NPER && !(threadIdx.x >> 5); i++)
			printf("per w%d %d: %llu ns, %llu batches, gap before %lld ns\\n", warp, i,
			       per_t1[i] - per_t0[i], per_b[i], i ? (long long)(per_t0[i] - per_t1[i - 1]) : 0ll);
		printf("cyc w%d life %llu ns %llu cycles\\n", warp, ns - k[C_T0_NS], clock64() - k[C_T0_CYC]);
		printf("cyc w%d passes %llu batches %llu wqes %llu scans_idle %llu scans_busy %llu short_idle_cyc %llu short_idle_n %llu busy_max %llu | "
		       "tail %llu scan_idle %llu scan_busy %llu begin %llu view %llu between %llu bb %llu "
		       "decode %llu overlap %llu claim %llu move %llu cqe %llu loopexit %llu end %llu\\n",
		       warp, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], c[0], c[1], c[2], c[3], c[4], c[5], c[6],
		       c[7], c[8], c[9], c[10], c[11], c[12], c[13]);
	}''')
if '#include <cstdio>' not in s and '#include <stdio.h>' not in s:
    s = '#include <stdio.h>\n' + s
open(sys.argv[2], 'w').write(s)
