#!/bin/bash
# Device call 9: the next batch's BBs loaded during the CQE's fence, and a
# run of batches going on from registers (no QP record re-read). p = that,
# g = call 8's g. p's exactness first, drain rows and latency alternated,
# then p's quick suite (every GPU row, payloads checked).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x devbin3/y
tar xJf devbin3/p.txz -C devbin3/x && tar xJf devbin3/g-prev.txz -C devbin3/y
export CUDA_MODULE_LOADING=EAGER
P=devbin3/x/n; G=devbin3/y/n
O=$OUT/t9; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf 90 $P/gic-gpu-conformance; tail -1 $O/conf.log | cut -c1-120; grep -c " ok " $O/conf.log; grep -ci fail $O/conf.log
for p in fidelity recv engine-check; do run $p 60 $P/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-120; done
run suite 120 $P/gic-gpu-suite gpu; tail -1 $O/suite.log | cut -c1-120
run check 60 $P/gic-gpu-pipeline --check; tail -1 $O/check.log | cut -c1-120
for L in 14 10; do
run pp$L 40 $P/gic-gpu-pipeline --batch 500 --ring $L; grep -E "trace off|poster" $O/pp$L.log | tail -2 | sed 's/^/  p: /' | cut -c1-150
done
for r in 1 2; do for v in G P; do
	eval b=\$$v
	run rate-$v$r 60 $b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16 --row t1-q1-b16
	grep "message rate with drain" $O/rate-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $7, $8}'
	run lat-$v$r 40 $b/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
run qsuite 200 $P/bench/gic/gic suite --quick --json $O/qsuite.json
tail -2 $O/qsuite.log | cut -c1-200; grep -ciE "invalid|FAIL" $O/qsuite.log
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t9.tgz t9 && rm -rf t9
