#!/bin/bash
# Device call 3: the two cuts the batch timeline pointed at (the lane-order
# overlap proof, CQE rounds over the signaled lanes only). n = the new
# engine (build-dev sm_90, c.txz), o = call 1's binaries (a.txz). The new
# engine's exactness programs first, then drain rows alternated, then the
# new stamped timeline.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe-tr' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/a.txz -C devbin3/x && tar xJf devbin3/c.txz -C devbin3/x
mv devbin3/x/s devbin3/x/o 2>/dev/null
export CUDA_MODULE_LOADING=EAGER
X=devbin3/x
O=$OUT/t3; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf 90 $X/n/gic-gpu-conformance; tail -1 $O/conf.log | cut -c1-120
for p in fidelity recv engine-check; do run $p 60 $X/n/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-120; done
run suite 120 $X/n/gic-gpu-suite gpu; tail -1 $O/suite.log | cut -c1-120
run check 60 $X/n/gic-gpu-pipeline --check; tail -2 $O/check.log | cut -c1-120
for r in 1 2; do for v in o n; do
	run batch-$v$r 40 $X/$v/gic-gpu-pipeline --batch 500; grep "trace off" $O/batch-$v$r.log | sed "s/^/  $v: /"
	run rate-$v$r 60 $X/$v/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16
	grep "message rate" $O/rate-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5, $6, $7}'
	run lat-$v$r 40 $X/$v/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v$r.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
run tr 60 $X/n/pipe-tr --batch 500; grep -E "drained|timeline|->" $O/tr.log | cut -c1-110
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe-tr' 2>/dev/null
cd $OUT && tar czf t3.tgz t3 && rm -rf t3
