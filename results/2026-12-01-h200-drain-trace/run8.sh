#!/bin/bash
# Device call 8: the runs of call 7 with one CQE costing what it did (the consumer record
# released before the ctrl-segment load, as before; one retirement per run).
# g = engine cuts + poll runs, a = call 1 (the engine and post.h before
# this session). g's exactness first, then drain rows and latency
# alternated three times.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x devbin3/y devbin3/z
tar xJf devbin3/g.txz -C devbin3/x && tar xJf devbin3/a.txz -C devbin3/z
export CUDA_MODULE_LOADING=EAGER
G=devbin3/x/n; A=devbin3/z/s
O=$OUT/t8; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf 90 $G/gic-gpu-conformance; tail -1 $O/conf.log | cut -c1-120
for p in fidelity recv engine-check; do run $p 60 $G/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-120; done
run suite 120 $G/gic-gpu-suite gpu; tail -1 $O/suite.log | cut -c1-120
run check 60 $G/gic-gpu-pipeline --check; tail -1 $O/check.log | cut -c1-120
for L in 14 10; do
run pg$L 40 $G/gic-gpu-pipeline --batch 500 --ring $L; grep -E "trace off|poster" $O/pg$L.log | tail -2 | sed 's/^/  g: /' | cut -c1-150
done
for r in 1 2 3; do for v in A G; do
	eval b=\$$v
	run rate-$v$r 60 $b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t32-q1-warp-wrap --row t64-q64-s64-b16 --row t16-q16-s16-b16 --row t1-q1-b16
	grep "message rate with drain" $O/rate-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $7, $8}'
done; for v in A G; do eval b=\$$v
	run lat-$v$r 40 $b/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t8.tgz t8 && rm -rf t8
