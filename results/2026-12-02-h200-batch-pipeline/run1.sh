#!/bin/bash
# Call 1: the batch pipeline variants (variants.py): d0 committed, p (next BBs before the
# fence, no record re-read), d (one CQE fence per two batches), pd (both); then the
# GPU engine's conformance, fidelity and pipeline trace check on p, d, pd.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin14/b.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 p d pd; do
	run rate-$v$k 60 /tmp/b/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
done; done
for v in d0 p d pd; do
	run lat-$v 60 /tmp/b/$v/gic lat --path gda-inline
	grep -E 'put\+completion|rtt|round' $O/lat-$v.log | head -3 | cut -c1-130 | sed "s/^/  $v: /"
done
for v in p d pd; do
	for t in conformance fidelity; do run $t-$v 200 /tmp/b/$v/gic-gpu-$t; tail -1 $O/$t-$v.log; done
	run pipe-$v 100 /tmp/b/$v/gic-gpu-pipeline --check; tail -1 $O/pipe-$v.log
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
