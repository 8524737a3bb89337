import sys
s=open('/tmp/e0.cu').read()
v=sys.argv[1]
def rep(s,old,new):
    assert s.count(old)==1,(old)
    return s.replace(old,new)
pf='''	/* DIAGNOSTIC: the next batch's BBs into L1 (no registers held). */
	if ((uint64_t)(n * nbb) + lane < left) {
		const uint8_t *nx = sq + ((cons + (uint64_t)n * nbb + lane) & (bb_cnt - 1)) * GIC_SEND_WQE_BB;
		asm volatile("prefetch.L1 [%0];" :: "l"(nx));
	}
'''
if v=='10':
    s=rep(s,'	sigmask = __ballot_sync(FULL_WARP, lane < n && lw.signaled);\n', pf+'	sigmask = __ballot_sync(FULL_WARP, lane < n && lw.signaled);\n')
if v=='11':
    s=rep(s,'	batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw, sigmask, cons, nbb, lane);\n','	batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw, sigmask, cons, nbb, lane);\n'+pf)
open('src/nic/softnic/engine_gpu.cu','w').write(s)
