#!/bin/bash
# Device call 7: the quiet takes CQEs in runs (gic_sq_poll_run: one lock,
# one consumer-record store, one release of retired per run of up to 16).
# g = engine cuts + poll runs (c.txz's tree plus post.h), c = engine cuts
# only, a = call 1 (bb7e32e's parent engine). g's exactness first, then
# drain rows and latency alternated.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x devbin3/y devbin3/z
tar xJf devbin3/g.txz -C devbin3/x && tar xJf devbin3/h.txz -C devbin3/x
tar xJf devbin3/c.txz -C devbin3/y && tar xJf devbin3/a.txz -C devbin3/z
export CUDA_MODULE_LOADING=EAGER
G=devbin3/x/n; C=devbin3/y/n; A=devbin3/z/s
O=$OUT/t7; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf 90 $G/gic-gpu-conformance; tail -1 $O/conf.log | cut -c1-120
for p in fidelity recv engine-check; do run $p 60 $G/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-120; done
run suite 120 $G/gic-gpu-suite gpu; tail -1 $O/suite.log | cut -c1-120
run check 60 $G/gic-gpu-pipeline --check; tail -1 $O/check.log | cut -c1-120
for L in 14 10; do
run po$L 40 devbin3/x/m/pipe-o --batch 500 --ring $L; grep -E "trace off|poster" $O/po$L.log | tail -2 | sed 's/^/  o: /' | cut -c1-150
run pg$L 40 $G/gic-gpu-pipeline --batch 500 --ring $L; grep -E "trace off|poster" $O/pg$L.log | tail -2 | sed 's/^/  g: /' | cut -c1-150
done
for r in 1 2; do for v in A C G; do
	eval b=\$$v
	run rate-$v$r 60 $b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t32-q1-warp-wrap --row t64-q64-s64-b16 --row t16-q16-s16-b16 --row t1-q1-b16
	grep "message rate with drain" $O/rate-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $7, $8}'
done; for v in A G; do eval b=\$$v
	run lat-$v$r 40 $b/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
