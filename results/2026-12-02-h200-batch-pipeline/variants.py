# Engine variants of the fourteenth session, made from the committed
# src/nic/softnic/engine_gpu.cu: usage variants.py IN.cu OUT.cu WHICH, with
# WHICH a set of letters: p (the next batch's BBs loaded before this batch's
# CQE fence, and no record re-read after a clean batch), d (the batch's last
# CQE tail deferred to the next batch's fence: one fence per two batches).
import sys
s = open(sys.argv[1]).read()
which = sys.argv[3]
def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (s.count(old), old[:200])
    s = s.replace(old, new)

if 'p' in which:
    rep('''						 int use_pre,
						 uint64_t cons, uint64_t left, int lane, uint32_t *bbs)
{''', '''						 int use_pre,
						 uint64_t cons, uint64_t left, int lane, uint32_t *bbs,
						 int *pre_next)
{''')
    rep('''	cq_slots slots = { NULL, 0, 0, 0, 0 };
''', '''	cq_slots slots = { NULL, 0, 0, 0, 0 };

	*pre_next = 0;
''')
    rep('''	if (lane < n && !(lane == 0 && use_pre)) /* else b: lane 0's BB at cons, loaded at the pass's start */''',
        '''	if (lane < n && !(use_pre == 2 || (lane == 0 && use_pre == 1)))''')
    rep('''		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, (uint32_t)n);
	batch_cqes(''', '''		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, (uint32_t)n);
	{
		uint64_t rest = left - (uint64_t)n * nbb;

		if ((uint64_t)lane < rest)
			read_bb(sq, bb_cnt, cons + (uint64_t)n * nbb + lane, b);
		*pre_next = rest != 0;
	}
	batch_cqes(''')
    rep('''		int k = 0;
		uint32_t bbs = 0;
''', '''		int k = 0, pre_next = 0;
		uint32_t bbs = 0;
''')
    rep('''				       pre_bb, pre, cons, left, lane, &bbs);
		pre = 0;''', '''				       pre_bb, pre, cons, left, lane, &bbs, &pre_next);
		pre = pre_next ? 2 : 0;''')
    rep('''		if (lane == 0)
			trace_flush(kc, tr, bq.qpn);
		/* The record, as''', '''		if (lane == 0)
			trace_flush(kc, tr, bq.qpn);
		if (pre) {
			cons += bbs;
			left -= bbs;
			continue;
		}
		/* The record, as''')

if 'd' in which:
    rep('''	uint32_t cqe_cnt, mode;
} cq_park;''', '''	uint32_t cqe_cnt, mode;
	uint32_t gpu_scope;
	uint64_t *pend_at, pend_tail;
} cq_park;''')
    rep('''static __device__ __forceinline__ void park_release(cq_park *pk)
{
	snx_cq *cq = pk->cq;
''', '''static __device__ __forceinline__ void cqe_tail_fenced(uint32_t gpu_scope, uint64_t *at, uint64_t tail);
static __device__ __forceinline__ void park_flush(cq_park *pk)
{
	uint64_t *at = pk->pend_at;

	if (at) {
		pk->pend_at = NULL;
		cqe_tail_fenced(pk->gpu_scope, at, pk->pend_tail);
	}
}

static __device__ __forceinline__ void park_release(cq_park *pk)
{
	snx_cq *cq = pk->cq;

	park_flush(pk);''')
    rep('''			uint64_t tail, *at = snx_cqe_fill_slot(s->cqes, s->cqe_cnt, s->mode, pi++, &f,
							       &tail);

			cqe_tail_fenced(kc.gpu_scope, at, tail);''', '''			uint64_t tail, *at = snx_cqe_fill_slot(s->cqes, s->cqe_cnt, s->mode, pi++, &f,
							       &tail);

			if (pk->pend_at) {
				uint64_t *pat = pk->pend_at;

				pk->pend_at = NULL;
				cqe_tail_fenced(kc.gpu_scope, pat, pk->pend_tail);
				gic_st_relaxed_sys_u64(at, tail);
			} else if (!(m & (m - 1))) {
				pk->pend_at = at;
				pk->pend_tail = tail;
			} else {
				cqe_tail_fenced(kc.gpu_scope, at, tail);
			}''')
    rep('''	if (lane == 0) {
		warp_end(p, pk, qp, st, &v, fresh);''', '''	if (lane == 0) {
		park_flush(pk);
		warp_end(p, pk, qp, st, &v, fresh);''')
    rep('''		pk->cq = NULL;
		job_own_init''', '''		pk->cq = NULL;
		pk->pend_at = NULL;
		pk->gpu_scope = kc.gpu_scope;
		job_own_init''')
open(sys.argv[2], 'w').write(s)
